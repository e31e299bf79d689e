import Foundation
import TeamworkModel

// What the task's declaration (TaskSchema) gives outside Swift, on standard output: scripts/declare writes it
// into docs/openapi.json and the phone's fields.js; a test compares the two with the declaration.
switch CommandLine.arguments.dropFirst().first {
case "openapi-task": print(TaskSchema.openAPITask)
case "phone-fields": print(TaskSchema.phoneModule, terminator: "")
default:
    FileHandle.standardError.write(Data("teamwork-declare: say openapi-task or phone-fields\n".utf8))
    exit(2)
}
