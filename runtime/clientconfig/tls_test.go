package clientconfig

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pki is a CA and certificates it signed, made in the test.
type pki struct {
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caPEM  []byte
}

func newPKI(t *testing.T, name string) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &pki{caCert: cert, caKey: key, caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a certificate for the IP addresses given (a client
// certificate for none) and returns it with its PKCS#8 key DER.
func (p *pki) issue(t *testing.T, name string, ips ...net.IP) (tls.Certificate, []byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name}, IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	return cert, certPEM, keyDER
}

// encryptPKCS8 encrypts a PKCS#8 key as openssl pkcs8 -topk8 -v2
// aes-256-cbc does: PBES2, PBKDF2 with HMAC-SHA256, AES-256-CBC.
func encryptPKCS8(t *testing.T, keyDER []byte, password string) []byte {
	t.Helper()
	salt, iv := make([]byte, 16), make([]byte, 16)
	rand.Read(salt)
	rand.Read(iv)
	key, err := pbkdf2.Key(sha256.New, password, salt, 2048, 32)
	if err != nil {
		t.Fatal(err)
	}
	pad := 16 - len(keyDER)%16
	plain := append(append([]byte{}, keyDER...), []byte(strings.Repeat(string(rune(pad)), pad))...)
	block, _ := aes.NewCipher(key)
	out := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(out, plain)
	mustMarshal := func(v any) asn1.RawValue {
		b, err := asn1.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return asn1.RawValue{FullBytes: b}
	}
	kdf := pkix.AlgorithmIdentifier{Algorithm: oidPBKDF2, Parameters: mustMarshal(pbkdf2Params{Salt: salt, IterationCount: 2048,
		PRF: pkix.AlgorithmIdentifier{Algorithm: oidHMACSHA256, Parameters: asn1.NullRawValue}})}
	enc := pkix.AlgorithmIdentifier{Algorithm: oidAES256CBC, Parameters: mustMarshal(iv)}
	info := encryptedPrivateKeyInfo{Algorithm: pkix.AlgorithmIdentifier{Algorithm: oidPBES2,
		Parameters: mustMarshal(pbes2Params{KeyDerivationFunc: kdf, EncryptionScheme: enc})}, Data: out}
	return pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: mustMarshal(info).FullBytes})
}

// tlsServer accepts TLS connections with cert until the test ends,
// requiring a client certificate of clientCAs when given, and sends
// each handshake's outcome.
func tlsServer(t *testing.T, cert tls.Certificate, clientCAs *x509.CertPool) (string, <-chan error) {
	t.Helper()
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if clientCAs != nil {
		cfg.ClientCAs, cfg.ClientAuth = clientCAs, tls.RequireAndVerifyClientCert
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	handshakes := make(chan error, 16)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				handshakes <- conn.(*tls.Conn).Handshake()
			}()
		}
	}()
	return ln.Addr().String(), handshakes
}

func writeBytes(t *testing.T, dir, name string, parts ...[]byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	var data []byte
	for _, p := range parts {
		data = append(data, p...)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func dial(t *testing.T, c Config, addr string) error {
	t.Helper()
	cfg, err := c.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := (&dialer{tls: cfg, truststore: c.TruststoreLocation}).DialContext(ctx, "tcp", addr)
	if err == nil {
		conn.Close()
	}
	return err
}

// TestTLSTruststoreAndKeystore: a truststore and a keystore (its key
// encrypted as PKCS#8 or legacy PEM, decrypted with ssl.key.password)
// reach a server that requires the client's certificate; a server
// certificate of another CA is a *CertificateError naming the broker
// and the truststore; a certificate for another host is one too, unless
// ssl.endpoint.identification.algorithm is empty.
func TestTLSTruststoreAndKeystore(t *testing.T) {
	dir := t.TempDir()
	ca := newPKI(t, "braid test CA")
	serverCert, _, _ := ca.issue(t, "broker", net.ParseIP("127.0.0.1"))
	clientCert, clientPEM, clientKey := ca.issue(t, "client")
	_ = clientCert
	pool := x509.NewCertPool()
	pool.AddCert(ca.caCert)
	addr, handshakes := tlsServer(t, serverCert, pool)
	truststore := writeBytes(t, dir, "ca.pem", ca.caPEM)

	//nolint:staticcheck // legacy encrypted PEM, as older OpenSSL writes it
	legacy, err := x509.EncryptPEMBlock(rand.Reader, "PRIVATE KEY", clientKey, []byte("k3y pass"), x509.PEMCipherAES256)
	if err != nil {
		t.Fatal(err)
	}
	for name, key := range map[string][]byte{
		"plain":  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: clientKey}),
		"pkcs8":  encryptPKCS8(t, clientKey, "k3y pass"),
		"legacy": pem.EncodeToMemory(legacy),
	} {
		t.Run(name, func(t *testing.T) {
			keystore := writeBytes(t, dir, name+".pem", key, clientPEM)
			c, err := Load("", []string{"BRAID_KAFKA_SECURITY_PROTOCOL=SSL", "BRAID_KAFKA_SSL_TRUSTSTORE_LOCATION=" + truststore,
				"BRAID_KAFKA_SSL_KEYSTORE_LOCATION=" + keystore, "BRAID_KAFKA_SSL_KEY_PASSWORD=k3y pass"})
			if err != nil {
				t.Fatal(err)
			}
			if err := dial(t, c, addr); err != nil {
				t.Fatalf("dial: %v", err)
			}
			if err := <-handshakes; err != nil {
				t.Fatalf("the server's handshake: %v", err)
			}
			if name == "plain" {
				return
			}
			c.KeyPassword = "wrong"
			if _, err := c.TLSConfig(); err == nil || !strings.Contains(err.Error(), "wrong password") || strings.Contains(err.Error(), "k3y") {
				t.Errorf("a wrong key password: %v", err)
			}
		})
	}

	t.Run("untrusted", func(t *testing.T) {
		other := newPKI(t, "another CA")
		otherCert, _, _ := other.issue(t, "broker", net.ParseIP("127.0.0.1"))
		addr, _ := tlsServer(t, otherCert, nil)
		c := Config{SecurityProtocol: SSL, TruststoreLocation: truststore}
		err := dial(t, c, addr)
		var ce *CertificateError
		if !errors.As(err, &ce) || ce.Hostname {
			t.Fatalf("error %v, want a *CertificateError", err)
		}
		want := "connecting to broker " + addr + " over TLS: its certificate is not trusted by ssl.truststore.location " + truststore
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("error %q, want it to start %q", err, want)
		}
		// The same through Check, as a command sees it.
		if err := c.Check(context.Background(), []string{addr}); !errors.As(err, &ce) {
			t.Errorf("Check: %v, want a *CertificateError", err)
		}
	})

	t.Run("hostname", func(t *testing.T) {
		wrongHost, _, _ := ca.issue(t, "elsewhere", net.ParseIP("10.9.9.9"))
		addr, _ := tlsServer(t, wrongHost, nil)
		c := Config{SecurityProtocol: SSL, TruststoreLocation: truststore}
		var ce *CertificateError
		if err := dial(t, c, addr); !errors.As(err, &ce) || !ce.Hostname {
			t.Fatalf("error %v, want a *CertificateError for the host name", err)
		}
		c.SkipHostnameVerification = true
		if err := dial(t, c, addr); err != nil {
			t.Errorf("without the host name check: %v", err)
		}
	})

	t.Run("not PEM", func(t *testing.T) {
		jks := writeBytes(t, dir, "store.jks", []byte{0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2})
		c := Config{SecurityProtocol: SSL, TruststoreLocation: jks, Sources: map[string]Source{"ssl.truststore.location": {File: "c.properties", Line: 4}}}
		_, err := c.Opts()
		var pe *PropertyError
		if !errors.As(err, &pe) || pe.Property != "ssl.truststore.location" || !strings.Contains(err.Error(), "convert it to PEM") ||
			!strings.Contains(err.Error(), "c.properties:4") {
			t.Errorf("a JKS file: %v", err)
		}
	})
}
