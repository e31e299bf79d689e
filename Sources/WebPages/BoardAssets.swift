import Crypto
import Foundation
import NIOCore
import ServerSupport

/// The board's stylesheet and scripts (`Assets/`, embedded in the binary as SwiftPM resources),
/// served from `/board/static/` under names that carry a hash of their bytes (`board.3f9c1a2b7d.css`):
/// a browser keeps each for a year and never asks again, and a new build's file has a new name.
/// Plain JavaScript, no framework, no build step; every page works without them (forms and links),
/// they only add dragging, live updates and the map.
enum BoardAssets {
    struct Asset: Sendable {
        /// The name it is served under: `board.<hash>.css`.
        let name: String
        let contentType: String
        let bytes: ByteBuffer
    }

    /// By the name each is served under.
    static let served: [String: Asset] = Dictionary(
        uniqueKeysWithValues: [
            asset("board.css", PackageResources.board_css),
            asset("board.js", PackageResources.board_js),
            asset("map.js", PackageResources.map_js),
            asset("icon.svg", Icon.svg),
        ].map { ($0.name, $0) })

    /// The served names, by file name.
    private static let names: [String: String] = Dictionary(
        uniqueKeysWithValues: served.values.map { asset in
            let parts = asset.name.split(separator: ".")
            return ("\(parts[0]).\(parts[2])", asset.name)
        })

    /// Where a page finds `file` (`board.css`): its hashed name, or the name itself for a file
    /// not embedded (Leaflet, read from the operator's folder).
    static func path(_ file: String) -> String { "/board/static/" + (names[file] ?? file) }

    private static func asset(_ file: String, _ bytes: [UInt8]) -> Asset {
        let digest = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined().prefix(10)
        let parts = file.split(separator: ".")
        let type =
            switch parts[1] {
            case "css": "text/css; charset=utf-8"
            case "svg": "image/svg+xml"
            default: "text/javascript; charset=utf-8"
            }
        return Asset(name: "\(parts[0]).\(digest).\(parts[1])", contentType: type, bytes: ByteBuffer(bytes: bytes))
    }
}
