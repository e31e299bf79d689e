import TeamworkFormats
import TeamworkModel
import Testing

@Suite("CSV reading")
struct CSVTableTests {
    @Test func quotedFieldsKeepCommasQuotesAndLineBreaks() throws {
        let table = try CSVTable(parsing: "title,description\n\"a, b\",\"say \"\"hi\"\"\nline two\"\nplain,x\n")
        #expect(table.header == ["title", "description"])
        #expect(table.records.map(\.fields) == [["a, b", "say \"hi\"\nline two"], ["plain", "x"]])
    }

    @Test func recordsRememberTheLineTheyStartOn() throws {
        let table = try CSVTable(parsing: "title\r\none\r\n\"two\nstill two\"\r\n\r\nthree")
        #expect(table.records.map(\.line) == [2, 3, 6])
    }

    @Test func headersAreTrimmedAndLowerCased() throws {
        #expect(try CSVTable(parsing: "\u{FEFF}Title , DUE\n").header == ["title", "due"])
    }

    @Test func aRowWithTheWrongFieldCountNamesItsLine() {
        #expect(throws: CSVError(line: 3, message: "has 3 fields, the header has 2")) {
            try CSVTable(parsing: "a,b\n1,2\n1,2,3\n")
        }
    }

    @Test func anUnclosedQuoteIsAnError() {
        #expect(throws: CSVError.self) { try CSVTable(parsing: "a\n\"open\n") }
    }

    @Test func anEmptyFileIsAnError() {
        #expect(throws: CSVError.self) { try CSVTable(parsing: "") }
    }
}
