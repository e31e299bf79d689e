import Crypto
import Foundation

/// Web Push as the browsers' push services take it: the message encrypted for one subscription
/// (RFC 8291, `aes128gcm` of RFC 8188) and the sender identified by a VAPID token (RFC 8292).
/// Nothing here touches the network; ``PushService`` sends what this makes.
public enum WebPush {
    /// A subscription's keys as the browser gives them (`PushSubscription.getKey`): the user
    /// agent's P-256 public key (65 bytes, uncompressed) and its 16-byte authentication secret.
    public struct Keys: Sendable, Equatable {
        public var p256dh: Data
        public var auth: Data

        /// Nil unless both have the sizes RFC 8291 gives them and the key is a point on P-256.
        public init?(p256dh: Data, auth: Data) {
            guard p256dh.count == 65, auth.count == 16, (try? P256.KeyAgreement.PublicKey(x963Representation: p256dh)) != nil else {
                return nil
            }
            (self.p256dh, self.auth) = (p256dh, auth)
        }
    }

    /// The service's VAPID key pair: a P-256 signing key, kept by the master (made once, read only
    /// by the service) and given to phones as its public half (the `applicationServerKey`).
    public struct VAPIDKey: Sendable {
        let key: P256.Signing.PrivateKey

        /// A new key pair from the system's cryptographic source.
        public init() { key = P256.Signing.PrivateKey() }

        /// The key kept as its 32-byte scalar.
        public init(privateKey: Data) throws { key = try P256.Signing.PrivateKey(rawRepresentation: privateKey) }

        public var privateKey: Data { key.rawRepresentation }
        /// The public key, uncompressed (65 bytes): what `pushManager.subscribe` takes.
        public var publicKey: Data { key.publicKey.x963Representation }

        /// `Authorization` for a request to `endpoint`: `vapid t=<JWT>, k=<public key>` (RFC 8292,
        /// section 3), the token for the endpoint's origin, expiring at `expires` (at most 24 hours on).
        public func authorization(endpoint: URL, subject: String, expires: Date) throws -> String {
            guard let scheme = endpoint.scheme, let host = endpoint.host else { throw WebPushError("not an absolute address") }
            // The origin as RFC 6454 serialises it: a scheme's own port is not written.
            let port = endpoint.port.flatMap { ($0 == 443 && scheme == "https") || ($0 == 80 && scheme == "http") ? nil : $0 }
            let origin = "\(scheme)://\(host.contains(":") ? "[\(host)]" : host)" + (port.map { ":\($0)" } ?? "")
            let header = Data(#"{"typ":"JWT","alg":"ES256"}"#.utf8)
            let claims = try JSONSerialization.data(
                withJSONObject: ["aud": origin, "exp": Int(expires.timeIntervalSince1970), "sub": subject], options: [.sortedKeys])
            let input = WebPush.base64URL(header) + "." + WebPush.base64URL(claims)
            let signature = try key.signature(for: Data(input.utf8)).rawRepresentation
            return "vapid t=\(input).\(WebPush.base64URL(signature)), k=\(WebPush.base64URL(publicKey))"
        }
    }

    /// The most plaintext one message may carry (RFC 8291, section 4): 4096 bytes of body less the
    /// header (86), the tag (16) and the delimiter (1).
    public static let maximumPayload = 4096 - 86 - 16 - 1

    /// `payload` encrypted for `keys` (RFC 8291, section 4): one `aes128gcm` record, its header
    /// holding a fresh salt and the sender's fresh ECDH key. `salt` and `senderKey` are for tests
    /// that check the result against the RFC's own example.
    public static func encrypt(
        _ payload: Data, for keys: Keys, salt: Data? = nil, senderKey: P256.KeyAgreement.PrivateKey? = nil
    ) throws -> Data {
        guard payload.count <= maximumPayload else { throw WebPushError("a push message holds at most \(maximumPayload) bytes") }
        let salt = salt ?? Data((0..<16).map { _ in UInt8.random(in: .min ... .max) })
        let sender = senderKey ?? P256.KeyAgreement.PrivateKey()
        let agent = try P256.KeyAgreement.PublicKey(x963Representation: keys.p256dh)
        let senderPublic = sender.publicKey.x963Representation
        let shared = try sender.sharedSecretFromKeyAgreement(with: agent)
        // IKM = HKDF(auth, ecdh, "WebPush: info" 0x00 ua_public as_public, 32)
        var info = Data("WebPush: info\0".utf8)
        info.append(keys.p256dh)
        info.append(senderPublic)
        let ikm = shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: keys.auth, sharedInfo: info, outputByteCount: 32)
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: ikm, salt: salt)
        let cek = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Data("Content-Encoding: aes128gcm\0".utf8), outputByteCount: 16)
        let nonce = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Data("Content-Encoding: nonce\0".utf8), outputByteCount: 12)
        var plaintext = payload
        plaintext.append(2)  // the last (and only) record's delimiter, no padding
        let sealed = try AES.GCM.seal(plaintext, using: cek, nonce: AES.GCM.Nonce(data: nonce.withUnsafeBytes { Data($0) }))
        // header: salt (16) | record size (4, big-endian) | key id length (1) | key id (the sender's public key)
        var body = salt
        body.append(contentsOf: [0, 0, 0x10, 0x00, UInt8(senderPublic.count)])
        body.append(senderPublic)
        body.append(sealed.ciphertext)
        body.append(sealed.tag)
        return body
    }

    public static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Bytes from base64url, with or without padding (browsers give keys without it); nil for anything else.
    public static func data(base64URL text: String) -> Data? {
        guard text.utf8.count <= 1024 else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
        return Data(base64Encoded: standard)
    }
}

public struct WebPushError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
