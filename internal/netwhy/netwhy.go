// Package netwhy says why a network exchange failed, in the words an
// operator needs to fix it: a name that does not resolve, a refused
// connection, a certificate not trusted, a timeout. Its messages name the
// host (host:port, never a URL: its path, query or userinfo may hold a
// credential) and never repeat a library's text, which may quote a URL.
package netwhy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
)

// Reason describes a network failure of an exchange with host, or is ""
// when err is none. dialed is true when the failure came before any request
// was sent (resolving, connecting, the TLS handshake): the server cannot
// have seen it.
func Reason(err error, host string) (reason string, dialed bool) {
	var (
		dnsErr   *net.DNSError
		certErr  *tls.CertificateVerificationError
		recErr   tls.RecordHeaderError
		alertErr tls.AlertError
		opErr    *net.OpError
		netErr   net.Error
	)
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	switch {
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return fmt.Sprintf("host name %s does not resolve (DNS: no such host)", name), true
	case errors.As(err, &dnsErr) && dnsErr.IsTimeout:
		return fmt.Sprintf("looking up host name %s in DNS timed out", name), true
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("looking up host name %s in DNS failed", name), true
	case errors.As(err, &certErr):
		return fmt.Sprintf("TLS handshake with %s failed: %s", host, certReason(certErr.Err, host)), true
	case errors.Is(err, http.ErrSchemeMismatch), errors.As(err, &recErr):
		return fmt.Sprintf("TLS handshake with %s failed: it answers plain HTTP (use an http:// url for a loopback server, or give it TLS)", host), true
	case errors.As(err, &alertErr):
		return fmt.Sprintf("TLS handshake with %s failed: the server sent alert %q", host, alertErr.Error()), true
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("connection refused by %s (nothing listens there)", host), true
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return fmt.Sprintf("%s is unreachable from this worker (no route)", host), true
	case errors.As(err, &opErr) && opErr.Op == "dial" && opErr.Timeout():
		return fmt.Sprintf("connecting to %s timed out", host), true
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return fmt.Sprintf("connecting to %s failed", host), true
	case errors.Is(err, syscall.ECONNRESET):
		return fmt.Sprintf("the connection to %s was reset", host), false
	case errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Sprintf("the exchange with %s timed out", host), false
	}
	return "", false
}

// certReason says why a server's certificate was refused.
func certReason(err error, host string) string {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &unknown):
		return "its certificate is signed by an authority this worker does not trust"
	case errors.As(err, &hostname):
		return fmt.Sprintf("its certificate is not valid for %s", host)
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return "its certificate has expired or is not yet valid"
	}
	return "its certificate was not accepted"
}
