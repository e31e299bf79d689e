import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// A path the server knows, asked with a method it does not take, is answered
/// 405 with `Allow` (RFC 9110 §15.5.6), not with the 404 of a path it does not
/// know: a client (or a generated one) learns what it got wrong.
struct AllowedMethods<Context: RequestContext>: RouterMiddleware {
    /// A path's segments (`*` stands for any one segment) and the methods it takes.
    struct Route: Sendable {
        var segments: [Substring]
        var methods: [HTTPRequest.Method]

        init(_ path: String, _ methods: [HTTPRequest.Method]) {
            segments = path.split(separator: "/")
            self.methods = methods
        }

        func matches(_ path: [Substring]) -> Bool {
            path.count == segments.count && zip(segments, path).allSatisfy { $0 == "*" || $0 == $1 }
        }
    }

    let routes: [Route]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let path = request.uri.path.split(separator: "/")
            guard let route = routes.first(where: { $0.matches(path) }), !route.methods.contains(request.method) else { throw error }
            let allowed = route.methods.map(\.rawValue).joined(separator: ", ")
            let body = #"{"error":{"message":"\#(request.method.rawValue) is not allowed here; use \#(allowed)"}}"#
            return Response(status: .methodNotAllowed,
                            headers: [.allow: allowed, .contentType: "application/json; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(string: body)))
        }
    }
}
