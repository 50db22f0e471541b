//go:build !unix

package testmcp

// processGroup returns 0: process groups are a Unix notion.
func processGroup() int { return 0 }
