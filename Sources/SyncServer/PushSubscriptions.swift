import CentralStore
import Foundation
import Hummingbird
import NIOCore
import ServerSupport
import TeamworkModel
import WebPush

/// `/v1/push`: a phone's Web Push subscription (docs/protocol.md, "Notifications").
///
///     GET    /v1/push   the service's VAPID public key, for `pushManager.subscribe`
///     PUT    /v1/push   keeps the phone's subscription (`PushSubscription.toJSON()`)
///     DELETE /v1/push   ends it (notifications turned off)
///
/// A subscription belongs to the token the request signed in with (the master decides whose it is,
/// in `teamwork_set_push_subscription`), one per token, revoked with it. Its endpoint is where the
/// service will send, so it is held to what a browser's push service gives: an `https` address of 12
/// to 1,024 bytes with no user name or password (`http` to this machine's loopback only where
/// `allowsLoopback`, for a push service of the tests' own); the sender vets the address again as it
/// connects, public addresses only.
struct PushSubscriptions: Sendable {
    let store: SharedStore<any EndpointStore>
    let allowsLoopback: Bool
    /// The key is made once and never changes: read from the master at the first ask.
    let publicKey = Locked<String?>(nil)

    struct Subscription: Decodable {
        struct Keys: Decodable {
            var p256dh: String
            var auth: String
        }

        var endpoint: String
        var keys: Keys
    }

    struct Key: ResponseEncodable {
        var publicKey: String
    }

    @Sendable func key(_ request: Request, context: SyncRequestContext) async throws -> Key {
        if let known = publicKey.value { return Key(publicKey: known) }
        // The endpoint faces the internet: it learns the public half only.
        let fresh = WebPush.VAPIDKey()
        let kept = try await store.run { try await $0.pushPublicKey(proposed: (Array(fresh.privateKey), Array(fresh.publicKey))) }
        let text = WebPush.base64URL(Data(kept))
        publicKey.mutate { $0 = text }
        return Key(publicKey: text)
    }

    @Sendable func keep(_ request: Request, context: SyncRequestContext) async throws -> Response {
        guard let secret = context.token else { throw HTTPError(.unauthorized) }
        let body: ByteBuffer
        do { body = try await request.body.collect(upTo: 4096) } catch {
            throw HTTPError(.contentTooLarge, message: "a subscription is at most 4096 bytes")
        }
        guard let subscription = try? JSONDecoder().decode(Subscription.self, from: Data(buffer: body)) else {
            throw HTTPError(.badRequest, message: "a subscription is {\"endpoint\": …, \"keys\": {\"p256dh\": …, \"auth\": …}}")
        }
        if let problem = Self.endpointProblem(subscription.endpoint, allowsLoopback: allowsLoopback) {
            throw HTTPError(.unprocessableContent, message: problem)
        }
        guard let p256dh = WebPush.data(base64URL: subscription.keys.p256dh), let auth = WebPush.data(base64URL: subscription.keys.auth),
            let keys = WebPush.Keys(p256dh: p256dh, auth: auth)
        else {
            throw HTTPError(.unprocessableContent, message: "keys.p256dh is a P-256 public key and keys.auth 16 bytes, each in base64url")
        }
        guard
            try await store.run({
                try await $0.setPushSubscription(
                    secret: secret, endpoint: subscription.endpoint, p256dh: Array(keys.p256dh), auth: Array(keys.auth))
            })
        else { throw HTTPError(.unauthorized) }
        context.logger.info(
            "push subscription kept",
            metadata: ["person": "\(context.person?.id ?? 0)", "push_service": "\(URL(string: subscription.endpoint)?.host ?? "")"])
        return Response(status: .noContent)
    }

    @Sendable func end(_ request: Request, context: SyncRequestContext) async throws -> Response {
        guard let secret = context.token else { throw HTTPError(.unauthorized) }
        _ = try await store.run { try await $0.removePushSubscription(secret: secret) }
        return Response(status: .noContent)
    }

    /// Why `endpoint` cannot be a push service's address, or nil when it can.
    static func endpointProblem(_ endpoint: String, allowsLoopback: Bool) -> String? {
        guard (12...1024).contains(endpoint.utf8.count) else { return "the endpoint is 12 to 1024 bytes" }
        guard let url = URL(string: endpoint), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty,
            url.user == nil, url.password == nil, url.fragment == nil
        else { return "the endpoint is an absolute https address with no user name, password or fragment" }
        let loopback = ["127.0.0.1", "localhost", "::1"].contains(host.lowercased())
        guard scheme == "https" || (scheme == "http" && loopback && allowsLoopback) else { return "the endpoint is an https address" }
        return nil
    }
}
