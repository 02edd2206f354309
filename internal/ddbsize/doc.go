// Package ddbsize computes DynamoDB item sizes and checks values against the
// service's limits before anything is sent.
//
// ItemSize follows the rules of the DynamoDB developer guide ("Item sizes and
// formats"):
//
//   - every attribute name counts its UTF-8 bytes;
//   - S counts UTF-8 bytes;
//   - B counts raw bytes (not base64);
//   - BOOL and NULL count 1;
//   - L and M count 3 bytes plus 1 byte per element plus the elements (and,
//     for M, their names);
//   - SS, NS and BS count the sum of their elements;
//   - a number is stored as base-100 digit pairs aligned on the decimal
//     point, plus one exponent byte, one more byte when negative, and 1 byte
//     for zero (see Number.Size).
//
// The number rule is the guide's "1 byte per two significant digits, plus 1
// byte" made exact.
//
// WireSize is a different measure: the bytes an item takes in the JSON body
// the AWS SDK for Go v2 sends (binary as base64, strings escaped). It keeps
// a BatchWriteItem request under its 16 MB limit. It is exact for the
// serializer of aws-sdk-go-v2 service/dynamodb v1.73.
//
// The checks reject, before a request is made, what DynamoDB would reject
// with a ValidationException for the whole request:
//
//   - numbers with more than 38 significant digits, or outside
//     1E-130..9.99…E+125 in magnitude;
//   - empty sets, and duplicate set elements (1 and 1.0 are duplicates);
//   - NULL false, and a nil B;
//   - empty attribute names;
//   - nesting deeper than 32 levels;
//   - key values that are empty, too long, or not S, N or B.
//
// Two refusals are stricter than some servers. Strings that are not valid
// UTF-8 are refused: the SDK would silently replace the bad bytes with
// U+FFFD. Numbers with a leading '+' are refused: dynalite refuses them and
// DynamoDB Local accepts them. Empty strings, binaries and set elements
// outside keys are accepted, as DynamoDB accepts them.
//
// The rules were checked against DynamoDB Local 1.25.1. Its server tests
// store items of exactly MaxItemSize bytes, with multi-byte UTF-8 and
// numbers of every size class, and see one more byte refused. They were
// checked against dynalite 4.0.0 too, which counts strings in UTF-16 code
// units instead of UTF-8 bytes.
//
// Every function is pure and safe for concurrent use.
package ddbsize
