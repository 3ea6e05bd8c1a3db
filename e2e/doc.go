// Package e2e holds black-box tests: real external clients, the built binary, and later a real browser, against Braid.
package e2e
