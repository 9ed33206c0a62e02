// Package badinput is test support: the corpus of malformed and hostile
// definition files in the module's testdata/bad, with the error each must
// give, for every test that feeds musterd bad input (pkg/watchers/fs reads
// each file alone; cmd/musterd drops them all into a running daemon's
// config dir).
//
// Place: test support only, beside the pipeline; it imports nothing of
// musterd's.
//
// Guarantees:
//
//   - [Expectations] lists every file of testdata/bad/errors.txt with the
//     part of its error the resource must show; a malformed line fails the
//     test, naming it.
//   - [WriteGenerated] makes the hostile files that are not committed (a
//     100 MB file, a symlink loop) and returns them with their errors in
//     the same form, so both tests expect the same thing of them.
package badinput
