import BlobStore
import Foundation

/// Where the service keeps blobs, as `--blobs` names it: `s3://BUCKET?endpoint=URL&region=R` (an
/// S3-compatible bucket every host shares, keys from the environment), else a folder on this host.
public enum BlobLocation: Sendable, Equatable {
    case folder(URL)
    case bucket(S3Location)

    /// What `given` names; the folder `folder` when `nil` or empty.
    public static func parse(_ given: String?, default folder: URL) throws -> BlobLocation {
        guard let given, !given.isEmpty else { return .folder(folder) }
        if let bucket = try S3Location.parse(given) { return .bucket(bucket) }
        return .folder(URL(fileURLWithPath: given))
    }

    /// The store there.
    public func open() throws -> any BlobStore {
        switch self {
        case .folder(let root): try FileBlobStore(root: root)
        case .bucket(let location): S3BlobStore(client: S3Client(location: location))
        }
    }
}
