import Foundation
import ServerSupport

extension FormFields {
    /// Where a form said to go back to, if it is a page of the board; else the board.
    static func back(_ value: String?) -> String {
        guard let value, value.hasPrefix("/board"), !value.hasPrefix("//"), value.utf8.count <= 2_000,
            value.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && $0 != "\\" })
        else { return "/board" }
        let rest = value.dropFirst("/board".count)
        guard rest.isEmpty || rest.hasPrefix("/") || rest.hasPrefix("?") else { return "/board" }
        return value
    }
}
