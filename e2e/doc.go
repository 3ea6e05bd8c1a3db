// Package e2e holds black-box tests: real external clients (kcat), the built binary and a real browser (headless Chromium through chromedp) against Braid.
package e2e
