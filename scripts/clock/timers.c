/*
 * Loaded before libfaketime on a set clock (scripts/test, TEAMWORK_TEST_CLOCK): timers keep working.
 *
 * libfaketime 0.9.10 (Debian 12) with FAKETIME_DONT_FAKE_MONOTONIC=1 refuses a timer armed for an
 * absolute instant of the monotonic or boot clock (timerfd_settime, clock_nanosleep: EINVAL), and
 * without that setting arms it 56 years ahead. Dispatch arms every timer so (Swift's Task.sleep,
 * NIO's scheduled tasks), and Python's time.sleep sleeps so: a process that waited only on a timer
 * never woke (an idle `teamwork-service` under the set clock stalled for good, no timer armed).
 * The clocks timers count on are not faked, so their instants go to the kernel as they are; an
 * instant of the faked wall clock is moved back by the set clock's offset first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/* The clock each timerfd counts, by descriptor (those past the table are taken as not the wall clock). */
static clockid_t clocks[65536];

static int is_wall(clockid_t clock) {
    return clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_ALARM || clock == CLOCK_TAI;
}

/* An instant of the set clock, as the kernel's wall clock counts it. */
static struct timespec real_instant(struct timespec at) {
    struct timespec faked, real;
    clock_gettime(CLOCK_REALTIME, &faked);
    syscall(SYS_clock_gettime, CLOCK_REALTIME, &real);
    long long offset = (faked.tv_sec - real.tv_sec) * 1000000000LL + (faked.tv_nsec - real.tv_nsec);
    long long total = at.tv_sec * 1000000000LL + at.tv_nsec - offset;
    if (total < 0) total = 0;
    struct timespec moved = {total / 1000000000LL, total % 1000000000LL};
    return moved;
}

int timerfd_create(int clock, int flags) {
    int fd = (int)syscall(SYS_timerfd_create, clock, flags);
    if (fd >= 0 && fd < (int)(sizeof clocks / sizeof clocks[0])) clocks[fd] = clock;
    return fd;
}

int timerfd_settime(int fd, int flags, const struct itimerspec *new_value, struct itimerspec *old_value) {
    struct itimerspec value = *new_value;
    int wall = fd >= 0 && fd < (int)(sizeof clocks / sizeof clocks[0]) && is_wall(clocks[fd]);
    if ((flags & TFD_TIMER_ABSTIME) && wall && (value.it_value.tv_sec || value.it_value.tv_nsec)) {
        value.it_value = real_instant(value.it_value);
    }
    return (int)syscall(SYS_timerfd_settime, fd, flags, &value, old_value);
}

int clock_nanosleep(clockid_t clock, int flags, const struct timespec *request, struct timespec *remain) {
    struct timespec at = *request;
    if ((flags & TIMER_ABSTIME) && is_wall(clock)) at = real_instant(at);
    /* clock_nanosleep answers the error number itself, not through errno. */
    return syscall(SYS_clock_nanosleep, clock, flags, &at, remain) == 0 ? 0 : errno;
}

