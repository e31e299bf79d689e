import Foundation
import TeamworkModel

/// Reads the tools' `--json` output back into the model types.
public enum JSONOutput {
    public static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try TeamworkJSON.decoder().decode(type, from: Data(text.utf8))
    }
}
