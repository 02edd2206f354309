//go:build !unix

package locals3

// lockFile is a no-op here: installs still land atomically by rename, a
// concurrent run merely downloads twice.
func lockFile(string) (func(), error) { return func() {}, nil }
