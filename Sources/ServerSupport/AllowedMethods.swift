import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TeamworkModel

/// A path the server knows, asked with a method it does not take, is answered
/// 405 with `Allow` (RFC 9110 §15.5.6), not with the 404 of a path it does not
/// know: a client (or a generated one) learns what it got wrong. The paths and
/// their methods are the router's own, learnt once every route is added
/// (``learn(from:)``): no second list to keep in step.
public struct AllowedMethods<Context: RequestContext>: RouterMiddleware {
    public init() {}

    /// A path's segments (`*` stands for any one segment) and the methods it takes.
    struct Route: Sendable {
        var segments: [Substring]
        var methods: [HTTPRequest.Method]

        func matches(_ path: [Substring]) -> Bool {
            path.count == segments.count && zip(segments, path).allSatisfy { $0 == "*" || $0 == $1 }
        }
    }

    private let routes = Locked<[Route]>([])

    /// Takes the routes `router` has now: call it once all are added.
    public func learn<C>(from router: Router<C>) {
        var learnt: [Route] = []
        for route in router.routes {
            // A captured parameter (`{id}`) or a wildcard stands for any one segment.
            let segments = route.path.components.map { component -> Substring in
                let text = component.description
                return text.hasPrefix("{") || text.hasPrefix("*") ? "*" : Substring(text)
            }.filter { !$0.isEmpty }
            if let index = learnt.firstIndex(where: { $0.segments == segments }) {
                learnt[index].methods.append(route.method)
            } else {
                learnt.append(Route(segments: segments, methods: [route.method]))
            }
        }
        let order: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete]
        for index in learnt.indices {
            learnt[index].methods.sort { (order.firstIndex(of: $0) ?? order.count) < (order.firstIndex(of: $1) ?? order.count) }
        }
        routes.mutate { $0 = learnt }
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let path = request.uri.path.split(separator: "/")
            guard let route = routes.value.first(where: { $0.matches(path) }), !route.methods.contains(request.method) else { throw error }
            let allowed = route.methods.map(\.rawValue).joined(separator: ", ")
            let body = #"{"error":{"message":"\#(request.method.rawValue) is not allowed here; use \#(allowed)"}}"#
            return Response(
                status: .methodNotAllowed,
                headers: [.allow: allowed, .contentType: "application/json; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: body)))
        }
    }
}
