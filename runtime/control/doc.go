// Package control carries commands from a server to the processes of an
// application it does not run (braid run, exported programs) through a
// control topic: crash, crash-wipe (crash and delete the state dir), stop
// or start one instance. It owns the topic's
// records, their signature, the Sender a server writes them with, the
// Listener a process reads them with, and the command-line flags both
// take (DefineFlags: --control-topic, --control-secret-file, and
// $BRAID_CONTROL_SECRET).
//
// A command is signed with HMAC-SHA256 under a secret the server and the
// processes share; a Listener acts only on commands whose signature
// verifies, that name its application and one of its instances, that were
// issued less than MaxAge ago by the sender's clock and whose nonce it has
// not seen. It reports every other command addressed to it, with the
// reason, and ignores those for other applications. Listeners read the
// topic from its end: a command sent while a process was down is not
// carried out when it comes back.
//
// What a command does is the Listener's caller's to decide (its Handle);
// package github.com/braidstream/braid/runtime/process carries them out
// as braid run does.
package control
