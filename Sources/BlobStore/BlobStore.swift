import Crypto
import Foundation

/// Where the service keeps blobs (photos, signatures, PDFs): one small
/// interface, so a store other than the service's disk (an S3-compatible one,
/// docs/operations.md) can take its place. Uploads are resumable and each
/// person's own: bytes are appended at the offset the store holds for that
/// person, and a blob counts for them only once ``finish(_:by:)`` found the
/// bytes they sent hash to its name. A blob is stored once, whoever sends it;
/// each person who sent it whole *holds* it (and only a holder may name it in
/// an attachment), and it stays *pending* for them until an attachment of
/// theirs names it (``claim(_:by:)``): what a person holds pending, or has
/// unfinished, is what their upload allowance counts.
public protocol BlobStore: Sendable {
    /// Where the store is, for messages (a folder, or a bucket at its endpoint).
    var location: String { get }
    /// Bytes of an upload gathered before ``append(_:to:by:at:)`` keeps them (0: each piece as it comes).
    var pieceBytes: Int { get }
    /// Bytes free on the disk holding the store, for the uploads' reserve; `nil` when the store is
    /// not on a disk of the service's own (an object store gives room itself).
    func freeBytes() -> Int64?
    /// Where `person`'s upload of `digest` stands: complete once they hold it, else what they sent so far.
    func state(of digest: BlobDigest, for person: Uploader) throws -> BlobState
    /// Whether the blob is whole in the store, whoever sent it (`.absent` or `.complete`).
    func state(of digest: BlobDigest) throws -> BlobState
    /// Appends `bytes` to `person`'s unfinished upload of `digest`, which must hold exactly `offset` bytes.
    func append(_ bytes: some Collection<UInt8>, to digest: BlobDigest, by person: Uploader, at offset: Int64) throws
    /// Checks `person`'s upload against its name: the blob whole and held by them (pending) when
    /// the bytes match, their upload removed (and ``BlobError/digestMismatch(expected:actual:)`` thrown) when not.
    func finish(_ digest: BlobDigest, by person: Uploader) throws
    /// Removes `person`'s unfinished upload (a refused one: nothing half-written stays).
    func discardPartial(_ digest: BlobDigest, by person: Uploader) throws
    /// An attachment of `person`'s names the blob: it no longer counts against their allowance.
    func claim(_ digest: BlobDigest, by person: Uploader) throws
    /// What `person` holds unfinished or pending (files and bytes: their allowance's measure), and
    /// the bytes of the files they sent whole in the last day (their daily budget's).
    func pending(of person: Uploader) throws -> (files: Int, bytes: Int64, sentLastDay: Int64)
    /// When someone last sent the blob whole (`nil`: nobody recorded, or no such blob).
    func lastSent(_ digest: BlobDigest) -> Date?
    /// The bytes of a complete blob, read in pieces.
    func read(_ digest: BlobDigest, _ body: (Data) throws -> Void) throws
    /// Everything in the store, for the sweep.
    func inventory() throws -> BlobInventory
    /// Removes a complete blob and who held it.
    func remove(_ digest: BlobDigest) throws
    /// Removes one unfinished upload or one pending mark, as the sweep found it.
    func discard(_ entry: BlobInventory.Upload) throws
    /// Removes a mark of a file sent whole, a day on.
    func discardSent(_ entry: BlobInventory.Upload) throws
    /// The first `count` bytes of a complete blob.
    func head(_ digest: BlobDigest, count: Int) throws -> [UInt8]
    /// Frees at least `bytes` by removing files no attachment has claimed: whole files every holder
    /// still has pending, sent before `before`, and unfinished uploads begun before `before` other than
    /// those under way (`sparing`); for `proof` (an upload announced for a task its sender holds), files
    /// nobody announced go whatever their age. Taken from whoever holds the most such bytes first,
    /// their oldest first (``JunkEviction``); nothing at all when they hold less than `bytes`. Each
    /// file's marks are read again just before it goes. How many bytes it freed.
    func evictUnclaimed(atLeast bytes: Int64, before: Date, sparing: Set<UploadKey>, proof: Bool) throws -> Int64
    /// Marks `person`'s upload of `digest` as announced proof: sent for a task they hold, its
    /// attachment to follow. An announced file is never removed to make room for files nobody
    /// announced, however young it is.
    func announce(_ digest: BlobDigest, by person: Uploader) throws
}

extension BlobStore {
    /// What the stored bytes of `digest` hash to, read in pieces (a damaged or swapped file shows).
    public func digestOfStored(_ digest: BlobDigest) throws -> BlobDigest {
        var hasher = SHA256()
        try read(digest) { hasher.update(data: $0) }
        return BlobDigest(hex: hasher.finalize().map { String(format: "%02x", $0) }.joined())!
    }
}

/// Which unclaimed files go first when an upload needs room on a full disk: the person holding the
/// most unclaimed bytes loses their oldest file, then again, until enough is free. A worker who
/// fills the disk with files no attachment names pays for it before a colleague's photo does.
public enum JunkEviction {
    public struct Candidate: Sendable, Equatable {
        public var person: Uploader
        public var time: Date
        public var bytes: Int64
        public var item: Item

        /// What would go: an unfinished upload, or a whole file with every mark of it.
        public enum Item: Sendable, Equatable {
            case partial(UploadKey)
            case complete(BlobDigest)

            /// Orders candidates of the same time.
            var tiebreak: String {
                switch self {
                case .partial(let key): "\(key.digest.hex)/\(key.person)"
                case .complete(let digest): digest.hex
                }
            }
        }

        public init(person: Uploader, time: Date, bytes: Int64, item: Item) {
            (self.person, self.time, self.bytes, self.item) = (person, time, bytes, item)
        }
    }

    /// The candidates to remove, in order, to free at least `bytes` (all of them if they hold less).
    public static func choose(_ candidates: [Candidate], atLeast bytes: Int64) -> [Candidate] {
        var byPerson = Dictionary(grouping: candidates, by: \.person).mapValues {
            $0.sorted { ($0.time, $0.item.tiebreak) < ($1.time, $1.item.tiebreak) }
        }
        var chosen: [Candidate] = []
        var freed: Int64 = 0
        while freed < bytes {
            let held = byPerson.mapValues { $0.reduce(0) { $0 + $1.bytes } }
            guard let (person, _) = held.filter({ $0.value > 0 }).max(by: { ($0.value, -$0.key) < ($1.value, -$1.key) }),
                let oldest = byPerson[person]?.first
            else { break }
            byPerson[person]?.removeFirst()
            chosen.append(oldest)
            freed += oldest.bytes
        }
        return chosen
    }
}

/// What a store holds, with the times the sweep judges by: when each upload began, and when
/// each holder sent a blob (never moved by anyone looking at it).
public struct BlobInventory: Sendable {
    /// An unfinished upload or a pending mark: whose, of what, since when.
    public struct Upload: Sendable, Equatable {
        public var digest: BlobDigest
        /// `nil`: an unfinished upload from before uploads were kept per person.
        public var person: Uploader?
        public var time: Date
        public var pending: Bool

        public init(digest: BlobDigest, person: Uploader?, time: Date, pending: Bool) {
            (self.digest, self.person, self.time, self.pending) = (digest, person, time, pending)
        }
    }

    /// Complete blobs, each with the latest time someone sent it whole (the file's own time when nobody is recorded).
    public var complete: [(digest: BlobDigest, sent: Date)]
    public var partial: [Upload]
    public var pending: [Upload]
    /// Marks of files each person sent whole (their daily budget's measure), with when.
    public var sent: [Upload]

    public init(complete: [(digest: BlobDigest, sent: Date)], partial: [Upload], pending: [Upload], sent: [Upload]) {
        (self.complete, self.partial, self.pending, self.sent) = (complete, partial, pending, sent)
    }
}
