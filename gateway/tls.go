package gateway

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// ConfigureServer turns srv into an HTTPS server with HTTP/2 when the edge configuration
// names a certificate and key (SHOPMIND_TLS_CERT_FILE, SHOPMIND_TLS_KEY_FILE); otherwise it
// leaves srv serving plain HTTP/1.1. The files are re-read when they change on disk (checked
// at most every 30 seconds), so a renewed certificate needs no restart.
func ConfigureServer(srv *http.Server, e EdgeConfig) error {
	if e.TLSCertFile == "" && e.TLSKeyFile == "" {
		return nil
	}
	certs, err := newCertReloader(e.TLSCertFile, e.TLSKeyFile)
	if err != nil {
		return err
	}
	srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.get}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	srv.Protocols = protocols
	return nil
}

// Serve serves srv on lis: over TLS (HTTP/2 and HTTP/1.1) when ConfigureServer set it up,
// plain HTTP otherwise.
func Serve(srv *http.Server, lis net.Listener) error {
	if srv.TLSConfig != nil {
		return srv.ServeTLS(lis, "", "")
	}
	return srv.Serve(lis)
}

// certReloader serves the key pair from disk, reloading it when a file's modification time
// changes. A failed reload keeps the previous pair.
type certReloader struct {
	certFile, keyFile string
	mu                sync.Mutex
	cert              *tls.Certificate
	certMod, keyMod   time.Time
	checked           time.Time
}

func newCertReloader(certFile, keyFile string) (*certReloader, error) {
	c := &certReloader{certFile: certFile, keyFile: keyFile}
	if err := c.load(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *certReloader) load() error {
	cm, err := modTime(c.certFile)
	if err != nil {
		return fmt.Errorf("SHOPMIND_TLS_CERT_FILE: %w", err)
	}
	km, err := modTime(c.keyFile)
	if err != nil {
		return fmt.Errorf("SHOPMIND_TLS_KEY_FILE: %w", err)
	}
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("SHOPMIND_TLS_CERT_FILE/SHOPMIND_TLS_KEY_FILE: %w", err)
	}
	c.cert, c.certMod, c.keyMod, c.checked = &pair, cm, km, time.Now()
	return nil
}

func (c *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.checked) > 30*time.Second {
		c.checked = time.Now()
		cm, err1 := modTime(c.certFile)
		km, err2 := modTime(c.keyFile)
		if err1 == nil && err2 == nil && (!cm.Equal(c.certMod) || !km.Equal(c.keyMod)) {
			_ = c.load() // keep serving the old pair when the new one is half written
		}
	}
	return c.cert, nil
}

func modTime(path string) (time.Time, error) {
	st, err := os.Stat(path)
	if err != nil {
		return time.Time{}, err
	}
	return st.ModTime(), nil
}

// WriteDevCert writes a self-signed development certificate for localhost, 127.0.0.1 and ::1
// (ECDSA P-256, valid one year) to dir/cert.pem and dir/key.pem, and returns their paths.
// Existing files still valid for a week are kept.
func WriteDevCert(dir string) (certFile, keyFile string, err error) {
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if pair, err := tls.LoadX509KeyPair(certFile, keyFile); err == nil && pair.Leaf != nil &&
		time.Until(pair.Leaf.NotAfter) > 7*24*time.Hour {
		return certFile, keyFile, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return "", "", err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"ShopMind development"}, CommonName: "localhost"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // self-signed: clients trust it directly
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", err
	}
	if err := writePEM(certFile, "CERTIFICATE", der, 0o644); err != nil {
		return "", "", err
	}
	if err := writePEM(keyFile, "PRIVATE KEY", keyDER, 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	data := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
