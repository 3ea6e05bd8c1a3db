package control_test

import (
	"context"
	"log"

	"github.com/braidstream/braid/runtime/control"
)

// A server crashes instance i1 of application word-copy, wherever it
// runs: the process whose Listener has the same secret carries it out.
func ExampleSender_Send() {
	s, err := control.NewSender(control.SenderConfig{Brokers: []string{"127.0.0.1:9092"}, Secret: []byte("shared secret")})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(context.Background(), "word-copy", "i1", control.Crash); err != nil {
		log.Fatal(err)
	}
}

// A process carries out the commands for its instances; Handle decides
// what each verb does (package process exits on a crash).
func ExampleNewListener() {
	l, err := control.NewListener(control.ListenerConfig{Brokers: []string{"127.0.0.1:9092"}, Secret: []byte("shared secret"),
		App: "word-copy", Instances: func() []string { return []string{"i1"} },
		Handle: func(c control.Command) error {
			log.Printf("%s %s", c.Verb, c.Instance)
			return nil
		}})
	if err != nil {
		log.Fatal(err)
	}
	if err := l.Run(context.Background()); err != nil { // until its context ends
		log.Fatal(err)
	}
}
