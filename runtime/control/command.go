package control

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// DefaultTopic is the control topic Senders write and Listeners read when
// their config names none.
const DefaultTopic = "_braid-control"

// MaxAge is how long after it was issued a command is carried out; a
// Listener refuses older ones, so that a recorded command cannot be
// replayed later.
const MaxAge = 30 * time.Second

// The verbs of a command.
const (
	// Crash kills the instance at once, with no leave, flush or commit:
	// a real failure, for the group to notice.
	Crash = "crash"
	// CrashWipe crashes the instance and deletes its state dir, as when
	// its pod is rescheduled on a node without its disk: it comes back
	// with no state and restores every store from the changelogs.
	CrashWipe = "crash-wipe"
	// Stop shuts the instance down gracefully: it commits and leaves.
	Stop = "stop"
	// Start starts a stopped or crashed instance of a process again.
	Start = "start"
)

// Command is one order to one instance of an application.
type Command struct {
	App      string `json:"app"`
	Instance string `json:"instance"`
	Verb     string `json:"verb"`
	// Issued is when the sender signed it, unix ms; Nonce tells apart
	// two commands issued in the same millisecond.
	Issued int64  `json:"issued"`
	Nonce  string `json:"nonce"`
}

// signed is a command as the topic carries it.
type signed struct {
	Command Command `json:"command"`
	MAC     string  `json:"mac"` // hex HMAC-SHA256 of the command's JSON
}

// RejectedError says why a Listener did not carry out a command
// addressed to its application.
type RejectedError struct {
	Command Command
	Reason  string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("command %s of instance %q of %q refused: %s", e.Command.Verb, e.Command.Instance, e.Command.App, e.Reason)
}

func sign(secret []byte, c Command) (signed, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return signed{}, err
	}
	return signed{Command: c, MAC: hex.EncodeToString(mac(secret, body))}, nil
}

func mac(secret, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write(body)
	return h.Sum(nil)
}

// verify reports whether s's signature is secret's.
func verify(secret []byte, s signed) bool {
	body, err := json.Marshal(s.Command)
	if err != nil {
		return false
	}
	got, err := hex.DecodeString(s.MAC)
	return err == nil && hmac.Equal(got, mac(secret, body))
}

func newNonce() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// checkVerb reports a verb that is none of Crash, Stop and Start.
func checkVerb(verb string) error {
	switch verb {
	case Crash, CrashWipe, Stop, Start:
		return nil
	}
	return fmt.Errorf("unknown verb %q (want %s, %s, %s or %s)", verb, Crash, CrashWipe, Stop, Start)
}

var errNoSecret = errors.New("no secret: commands cannot be signed or verified")
