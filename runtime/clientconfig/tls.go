package clientconfig

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// CertificateError says a broker's certificate failed verification.
type CertificateError struct {
	// Broker is the address connected to.
	Broker string
	// Truststore is ssl.truststore.location; empty for the system's
	// certificate authorities.
	Truststore string
	// Hostname is set when the certificate is trusted but does not name
	// the host connected to.
	Hostname bool
	// Err is the verification's error.
	Err error
}

func (e *CertificateError) Error() string {
	if e.Hostname {
		return fmt.Sprintf("connecting to broker %s over TLS: its certificate does not name the host connected to "+
			"(ssl.endpoint.identification.algorithm=https; set it empty to skip the host name check): %v", e.Broker, e.Err)
	}
	trust := "the system's certificate authorities (set ssl.truststore.location to the PEM file of the cluster's CA)"
	if e.Truststore != "" {
		trust = "ssl.truststore.location " + e.Truststore
	}
	return fmt.Sprintf("connecting to broker %s over TLS: its certificate is not trusted by %s: %v", e.Broker, trust, e.Err)
}

func (e *CertificateError) Unwrap() error { return e.Err }

// TLSConfig returns the tls.Config of c's ssl.* properties, the
// truststore and keystore read: nil without TLS. The host name is
// checked unless SkipHostnameVerification; Opts' dialer sets ServerName
// for each broker.
func (c *Config) TLSConfig() (*tls.Config, error) {
	if !c.TLS() {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.TruststoreLocation != "" {
		pool, err := readTruststore(c.TruststoreLocation)
		if err != nil {
			return nil, c.problem("ssl.truststore.location", "%v", err)
		}
		cfg.RootCAs = pool
	}
	if c.KeystoreLocation != "" {
		cert, err := readKeystore(c.KeystoreLocation, c.KeyPassword)
		if err != nil {
			return nil, c.problem("ssl.keystore.location", "%v", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if c.SkipHostnameVerification {
		// The chain is still verified, against the truststore, but for
		// no host name.
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the broker sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
			for _, ic := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(ic)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return cfg, nil
}

// notPEM explains a store that holds no PEM.
const notPEM = "holds no PEM; JKS and PKCS12 stores are not supported: convert it to PEM (keytool -importkeystore -deststoretype PKCS12, then openssl pkcs12 -nodes)"

// readTruststore reads the CA certificates of a PEM file.
func readTruststore(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the truststore: %w", err)
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("reading the truststore %s: certificate %d: %w", path, n+1, err)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("the truststore %s %s", path, notPEM)
	}
	return pool, nil
}

// readKeystore reads a PEM keystore: the client's private key (perhaps
// encrypted, decrypted with password) and its certificate chain, in one
// file as Kafka's PEM keystores are.
func readKeystore(path, password string) (tls.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("reading the keystore: %w", err)
	}
	var certs, keys []*pem.Block
	for rest := data; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		switch {
		case block.Type == "CERTIFICATE":
			certs = append(certs, block)
		case strings.HasSuffix(block.Type, "PRIVATE KEY"):
			keys = append(keys, block)
		}
	}
	switch {
	case len(certs) == 0 && len(keys) == 0:
		return tls.Certificate{}, fmt.Errorf("the keystore %s %s", path, notPEM)
	case len(keys) != 1:
		return tls.Certificate{}, fmt.Errorf("the keystore %s holds %d private keys: want one, with its certificate chain", path, len(keys))
	case len(certs) == 0:
		return tls.Certificate{}, fmt.Errorf("the keystore %s holds no certificate: want the private key's certificate chain beside it", path)
	}
	key, err := decryptKeyBlock(keys[0], password)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("the keystore %s: %w", path, err)
	}
	var certPEM []byte
	for _, b := range certs {
		certPEM = append(certPEM, pem.EncodeToMemory(b)...)
	}
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(key))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("the keystore %s: %w", path, err)
	}
	return cert, nil
}

// errNotTLS says a broker answered a TLS handshake in something else.
var errNotTLS = errors.New("it does not answer in TLS")

// dialer dials brokers over TLS, naming the broker and the truststore in
// a verification failure.
type dialer struct {
	tls        *tls.Config
	truststore string
}

// DialContext is kgo.Dialer's function.
func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	cfg := d.tls.Clone()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	td := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}, Config: cfg}
	conn, err := td.DialContext(ctx, network, addr)
	if err != nil {
		return nil, classifyTLS(addr, d.truststore, err)
	}
	return conn, nil
}

// classifyTLS turns a verification failure into a *CertificateError.
func classifyTLS(addr, truststore string, err error) error {
	var host x509.HostnameError
	if errors.As(err, &host) {
		return &CertificateError{Broker: addr, Truststore: truststore, Hostname: true, Err: err}
	}
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	if errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &verify) {
		return &CertificateError{Broker: addr, Truststore: truststore, Err: err}
	}
	var header tls.RecordHeaderError
	if errors.As(err, &header) {
		return fmt.Errorf("connecting to broker %s over TLS: %w (is security.protocol right?): %w", addr, errNotTLS, err)
	}
	return err
}
