//go:build !unix

package localddb

// LockFile is a no-op here: installs still land atomically by rename, a
// concurrent run merely downloads twice.
func LockFile(string) (func(), error) { return func() {}, nil }
