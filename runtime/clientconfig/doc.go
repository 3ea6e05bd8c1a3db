// Package clientconfig owns how Braid reaches a Kafka cluster that needs
// TLS or SASL: it reads a client configuration written with Apache
// Kafka's own property names (a Java .properties file, and environment
// variables BRAID_KAFKA_<PROPERTY>, which override it), checks it,
// reporting every problem at once with the property and where it was set,
// and turns it into franz-go options (Config.Opts) that every Kafka client
// of a command gets. Check connects once at start-up, so that a refused
// login or an untrusted certificate ends a command at once with an error
// that says which.
//
// Supported properties: security.protocol (PLAINTEXT, SSL, SASL_PLAINTEXT,
// SASL_SSL), sasl.mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512),
// sasl.jaas.config (PlainLoginModule or ScramLoginModule with username and
// password) or sasl.username and sasl.password, ssl.truststore.location
// and ssl.keystore.location as PEM files (ssl.truststore.type and
// ssl.keystore.type PEM; JKS and PKCS12 stores are refused: convert them),
// ssl.key.password for an encrypted key (PKCS#8 "ENCRYPTED PRIVATE KEY"
// with PBES2: PBKDF2 and AES-CBC, as OpenSSL 1.1+ and Kafka's own PEM
// support write it; or legacy OpenSSL "Proc-Type: 4,ENCRYPTED" PEM),
// ssl.endpoint.identification.algorithm (https, the default, or empty to
// skip the host name check), bootstrap.servers and client.id. Tuning
// properties of the Java client that mean nothing to Braid (Ignored) are
// accepted and listed in Config.Ignored; any other property is an error
// naming it and its source.
//
// Secrets (sasl.password, sasl.jaas.config, ssl.key.password) are never
// printed: Config's String, GoString and LogValue redact them, and no
// error carries their values.
package clientconfig
