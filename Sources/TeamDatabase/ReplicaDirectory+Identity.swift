import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension ReplicaDirectory {
    /// Which folder this is among those that serve one master: instances that
    /// share a folder share its identity (one generator among them, one
    /// listener cursor per replica), instances with folders of their own each
    /// generate their own files and keep their own cursors, since positions in
    /// one folder's `team-12.sqlite` mean nothing in another's.
    ///
    /// Kept in the folder's `folder-id` file, made on first use: a random id
    /// for a new folder, `legacy` for a folder that already held replicas
    /// before folders had identities (its cursors keep their old names).
    public func identity() throws -> String {
        let path = url.appending(path: "folder-id").path
        if let existing = Self.readIdentity(path) { return existing }
        let legacy = !(try replicas()).isEmpty || FileManager.default.fileExists(atPath: url.appending(path: "generator-state.json").path)
        let fresh = legacy ? Self.legacyIdentity : String(UUID().uuidString.lowercased().prefix(12))
        // O_EXCL: of two instances starting at once on a new folder, the first one's id wins.
        let descriptor = Glibc.open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        if descriptor >= 0 {
            let bytes = Array((fresh + "\n").utf8)
            let written = write(descriptor, bytes, bytes.count)
            fsync(descriptor)
            close(descriptor)
            guard written == bytes.count else {
                unlink(path)
                throw ReplicaError("cannot write \(path)")
            }
            return fresh
        }
        guard errno == EEXIST else { throw ReplicaError("cannot create \(path): \(String(cString: strerror(errno)))") }
        for _ in 0..<50 {
            if let existing = Self.readIdentity(path) { return existing }
            usleep(10_000)
        }
        throw ReplicaError("\(path) is empty; remove it and start again")
    }

    /// The name of a replica's listener cursor (and lock) for the folder `identity`:
    /// `team-12` in the legacy folder, `<identity>/team-12` in any other.
    public static func source(_ name: String, identity: String) -> String {
        identity == legacyIdentity ? name : identity + "/" + name
    }

    static let legacyIdentity = "legacy"

    private static func readIdentity(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }
}
