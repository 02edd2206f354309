//go:build !unix

package localddb

// lockFile is a no-op here: installs still land atomically by rename, a
// concurrent run merely downloads twice.
func lockFile(string) (func(), error) { return func() {}, nil }
