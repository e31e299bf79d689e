/// A short fingerprint of a text (FNV-1a of its UTF-8, 64 bits as 16 hex digits): to tell whether a text
/// changed, never to keep a secret. A migration's checksum, the device's declaration of a task.
public enum Fingerprint {
    public static func of(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
