/*
 * Loaded before libfaketime on a set clock (scripts/test, TEAMWORK_TEST_CLOCK): timers keep working.
 *
 * libfaketime 0.9.10 (Debian 12) with FAKETIME_DONT_FAKE_MONOTONIC=1 refuses a timer armed for an
 * absolute instant of the monotonic or boot clock (timerfd_settime, clock_nanosleep: EINVAL), and
 * without that setting arms it 56 years ahead. Dispatch arms every timer so (Swift's Task.sleep,
 * NIO's scheduled tasks), and Python's time.sleep sleeps so: a process that waited only on a timer
 * never woke (an idle `teamwork-service` under the set clock stalled for good, no timer armed).
 * The clocks timers count on are not faked, so their instants go to the kernel as they are; an
 * instant of the faked wall clock (CLOCK_REALTIME) is moved back by the set clock's offset first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/* The clock each timerfd counts, plus one, by descriptor (0: not made here; those past the table
   are taken as not the wall clock). */
static int clocks[65536];
#define TABLE (int)(sizeof clocks / sizeof clocks[0])

/* An instant of the set clock, as the kernel's wall clock counts it (at least 1 ns: an absolute
   zero would disarm a timer instead of firing it). Instants past year 2200 ("never") stay as they are. */
static struct timespec real_instant(struct timespec at) {
    if (at.tv_sec > 7258118400LL) return at;
    struct timespec faked, real;
    clock_gettime(CLOCK_REALTIME, &faked);
    syscall(SYS_clock_gettime, CLOCK_REALTIME, &real);
    long long offset = (faked.tv_sec - real.tv_sec) * 1000000000LL + (faked.tv_nsec - real.tv_nsec);
    long long total = at.tv_sec * 1000000000LL + at.tv_nsec - offset;
    if (total < 1) total = 1;
    struct timespec moved = {total / 1000000000LL, total % 1000000000LL};
    return moved;
}

int timerfd_create(int clock, int flags) {
    int fd = (int)syscall(SYS_timerfd_create, clock, flags);
    if (fd >= 0 && fd < TABLE) __atomic_store_n(&clocks[fd], clock + 1, __ATOMIC_RELAXED);
    return fd;
}

int timerfd_settime(int fd, int flags, const struct itimerspec *new_value, struct itimerspec *old_value) {
    if (new_value == NULL) return (int)syscall(SYS_timerfd_settime, fd, flags, new_value, old_value);
    struct itimerspec value = *new_value;
    int wall = fd >= 0 && fd < TABLE && __atomic_load_n(&clocks[fd], __ATOMIC_RELAXED) == CLOCK_REALTIME + 1;
    if ((flags & TFD_TIMER_ABSTIME) && wall && (value.it_value.tv_sec || value.it_value.tv_nsec)) {
        int saved = errno;
        value.it_value = real_instant(value.it_value);
        errno = saved;
    }
    return (int)syscall(SYS_timerfd_settime, fd, flags, &value, old_value);
}

int clock_nanosleep(clockid_t clock, int flags, const struct timespec *request, struct timespec *remain) {
    if (request == NULL) return EFAULT;
    int saved = errno;
    struct timespec at = *request;
    if ((flags & TIMER_ABSTIME) && clock == CLOCK_REALTIME) at = real_instant(at);
    /* clock_nanosleep answers the error number itself and leaves errno as it was. */
    int result = syscall(SYS_clock_nanosleep, clock, flags, &at, remain) == 0 ? 0 : errno;
    errno = saved;
    return result;
}
