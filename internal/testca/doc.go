// Package testca makes a certificate authority of a test's own and a
// serving certificate it signed for the loopback addresses (127.0.0.1,
// ::1, localhost), as PEM files: what the test rigs of servers that speak
// TLS (internal/dextest, internal/redistest) give their servers, and what
// their clients trust. It imports nothing of musterd's.
package testca
