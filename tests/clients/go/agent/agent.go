// Package agent is what the Go agents share: the JSON-lines protocol of
// tests/clients/agents/common.py (the same flags, events and commands as the Python agents),
// the consumed positions, and the stamps of ownership intervals.
//
// An agent is one real Kafka consumer in its own process. It prints one JSON object per line
// on stdout (events: assigned, revoked, committed, fetched, closed, error, records) and reads
// one JSON object per line on stdin (commands: commit, commit_consumed, committed, close);
// common.py documents each field. stdin is read by a goroutine into a channel, so the
// consumer's own loop never blocks on it; EOF on stdin is a close.
package agent

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Args are common.py's flags; each agent refuses those its client cannot honour.
type Args struct {
	Bootstrap          []string
	Group              string
	Topics             []string
	Strategies         []string
	ClientID           string
	GroupProtocol      string
	InstanceID         string
	RebalanceTimeoutMs int
	Rack               string
	RemoteAssignor     string
	ReportRecords      bool
	CommitOnRevoke     bool
	// SASL login (`--sasl MECHANISM:USER`, the password in AGENT_SASL_PASSWORD, never on the
	// command line); empty when the agent does not log in. The Go agents log in with PLAIN.
	SaslMechanism string
	SaslUser      string
	SaslPassword  string
	// TLS (`--ssl-ca FILE`: trusting that PEM CA); nil: plaintext.
	TLS *tls.Config
}

type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// ParseArgs reads the flags (`--name value`, as the harness passes them) and starts the
// SIGUSR1 stack dump.
func ParseArgs() Args {
	var a Args
	var bootstrap, topics string
	var strategies repeated
	flag.StringVar(&bootstrap, "bootstrap", "", "comma-separated bootstrap servers")
	flag.StringVar(&a.Group, "group", "", "group id")
	flag.StringVar(&topics, "topics", "", "comma-separated subscription")
	flag.Var(&strategies, "strategy", "assignment strategy name (repeatable)")
	flag.StringVar(&a.ClientID, "client-id", "", "client id")
	flag.StringVar(&a.GroupProtocol, "group-protocol", "classic", "classic, or consumer (KIP-848)")
	flag.StringVar(&a.InstanceID, "instance-id", "", "group.instance.id: a static member")
	flag.IntVar(&a.RebalanceTimeoutMs, "rebalance-timeout-ms", 0, "JoinGroup's rebalance timeout")
	flag.StringVar(&a.Rack, "rack", "", "client rack")
	flag.StringVar(&a.RemoteAssignor, "remote-assignor", "", "server-side assignor (consumer protocol)")
	flag.BoolVar(&a.ReportRecords, "report-records", false, "emit a records event for what each poll returned")
	flag.BoolVar(&a.CommitOnRevoke, "commit-on-revoke", false, "commit the consumed positions of revoked partitions in the revoke callback")
	var sasl, sslCA string
	flag.StringVar(&sasl, "sasl", "", "MECHANISM:USER to log in with (PLAIN or SCRAM-SHA-512), the password in AGENT_SASL_PASSWORD")
	flag.StringVar(&sslCA, "ssl-ca", "", "speak TLS, trusting this PEM CA")
	flag.Parse()
	if sslCA != "" {
		pem, err := os.ReadFile(sslCA)
		if err != nil {
			Fatal("--ssl-ca: " + err.Error())
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			Fatal("--ssl-ca " + sslCA + ": no PEM certificate in it")
		}
		a.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if sasl != "" {
		mechanism, user, ok := strings.Cut(sasl, ":")
		a.SaslPassword = os.Getenv("AGENT_SASL_PASSWORD")
		if !ok || a.SaslPassword == "" {
			Fatal("--sasl is MECHANISM:USER, with the password in AGENT_SASL_PASSWORD")
		}
		if mechanism != "PLAIN" && mechanism != "SCRAM-SHA-512" {
			Fatal("the Go agents log in with PLAIN or SCRAM-SHA-512, not " + mechanism)
		}
		a.SaslMechanism, a.SaslUser = mechanism, user
	}
	if bootstrap == "" || a.Group == "" || topics == "" {
		Fatal("--bootstrap, --group and --topics are required")
	}
	a.Bootstrap = strings.Split(bootstrap, ",")
	a.Topics = strings.Split(topics, ",")
	a.Strategies = strategies
	dumpStacksOnSIGUSR1()
	return a
}

// Refuse fails the agent when a flag its client cannot honour was given.
func (a Args) Refuse(client string, flags map[string]bool) {
	for name, given := range flags {
		if given {
			Fatal(fmt.Sprintf("%s: --%s is not supported by this agent", client, name))
		}
	}
}

// Fatal reports an error event and exits: a misuse of the agent, not a client's behaviour.
func Fatal(message string) {
	Emit("error", Fields{"message": message})
	os.Exit(2)
}

// Debug is true when AGENT_DEBUG is set (any value): the agents then log their client at
// its debug level on stderr, which the harness keeps and prints for a failing test.
func Debug() bool { return os.Getenv("AGENT_DEBUG") != "" }

// dumpStacksOnSIGUSR1 writes every goroutine's stack to stderr on SIGUSR1 (the harness
// asks for it when a test fails, to show where a client was stuck).
func dumpStacksOnSIGUSR1() {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGUSR1)
	go func() {
		for range signals {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			fmt.Fprintf(os.Stderr, "goroutine stacks (most recent call first):\n%s\n", buf[:n])
		}
	}()
}

// Fields of one event.
type Fields map[string]any

var out sync.Mutex

// Emit prints one event as a JSON line (keys sorted, as the Python agents print them).
func Emit(event string, fields Fields) {
	if fields == nil {
		fields = Fields{}
	}
	fields["event"] = event
	line, err := json.Marshal(fields)
	if err != nil {
		line, _ = json.Marshal(Fields{"event": "error", "message": "encoding " + event + ": " + err.Error()})
	}
	out.Lock()
	defer out.Unlock()
	os.Stdout.Write(append(line, '\n'))
}

// Stamp is now on the wall clock (seconds) and on CLOCK_MONOTONIC (ns): the latter is one
// clock for every process on Linux (Python's time.monotonic_ns reads it too), so the stamps
// of different consumers compare, and it never steps.
func Stamp() (float64, int64) {
	wall := float64(time.Now().UnixNano()) / 1e9
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return wall, ts.Nano()
}

// Partitions is a set of partitions by topic, as the clients hand them over.
type Partitions map[string][]int32

// List is `[[topic, partition]...]` sorted.
func (ps Partitions) List() [][2]any {
	type tp struct {
		t string
		p int32
	}
	var all []tp
	for t, parts := range ps {
		for _, p := range parts {
			all = append(all, tp{t, p})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].t != all[j].t {
			return all[i].t < all[j].t
		}
		return all[i].p < all[j].p
	})
	list := make([][2]any, 0, len(all))
	for _, x := range all {
		list = append(list, [2]any{x.t, x.p})
	}
	return list
}

// Add puts `more` into ps.
func (ps Partitions) Add(more Partitions) {
	for t, parts := range more {
		for _, p := range parts {
			if !ps.Has(t, p) {
				ps[t] = append(ps[t], p)
			}
		}
	}
}

// Remove takes `gone` out of ps.
func (ps Partitions) Remove(gone Partitions) {
	for t, parts := range gone {
		kept := ps[t][:0]
		for _, p := range ps[t] {
			if !contains(parts, p) {
				kept = append(kept, p)
			}
		}
		if len(kept) == 0 {
			delete(ps, t)
		} else {
			ps[t] = kept
		}
	}
}

// Has says whether ps holds t[p].
func (ps Partitions) Has(t string, p int32) bool { return contains(ps[t], p) }

// Clone is a copy of ps.
func (ps Partitions) Clone() Partitions {
	c := Partitions{}
	c.Add(ps)
	return c
}

func contains(parts []int32, p int32) bool {
	for _, q := range parts {
		if q == p {
			return true
		}
	}
	return false
}

// Offset is one `[topic, partition, offset]` of a command or an event.
type Offset struct {
	Topic     string
	Partition int32
	Offset    int64
}

// MarshalJSON writes the triple.
func (o Offset) MarshalJSON() ([]byte, error) {
	return json.Marshal([3]any{o.Topic, o.Partition, o.Offset})
}

// UnmarshalJSON reads the triple.
func (o *Offset) UnmarshalJSON(b []byte) error {
	var raw [3]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if err := json.Unmarshal(raw[0], &o.Topic); err != nil {
		return err
	}
	if err := json.Unmarshal(raw[1], &o.Partition); err != nil {
		return err
	}
	return json.Unmarshal(raw[2], &o.Offset)
}

// SortOffsets sorts by topic, then partition.
func SortOffsets(offsets []Offset) []Offset {
	sort.Slice(offsets, func(i, j int) bool {
		if offsets[i].Topic != offsets[j].Topic {
			return offsets[i].Topic < offsets[j].Topic
		}
		return offsets[i].Partition < offsets[j].Partition
	})
	return offsets
}

// Committed is one `[topic, partition, offset or null]` of the answer to `committed`.
type Committed struct {
	Topic     string
	Partition int32
	Offset    *int64 // nil: nothing committed
}

// MarshalJSON writes the triple.
func (c Committed) MarshalJSON() ([]byte, error) {
	return json.Marshal([3]any{c.Topic, c.Partition, c.Offset})
}

// Fetched reports the answer to `committed`: for each partition asked, `found` says what is
// committed (ok false: nothing).
func Fetched(asked Partitions, found func(topic string, partition int32) (int64, bool)) {
	var list []Committed
	for _, tp := range asked.List() {
		t, p := tp[0].(string), tp[1].(int32)
		c := Committed{Topic: t, Partition: p}
		if o, ok := found(t, p); ok && o >= 0 {
			c.Offset = &o
		}
		list = append(list, c)
	}
	Emit("fetched", Fields{"offsets": list})
}

// Command is one line of stdin.
type Command struct {
	Cmd        string   `json:"cmd"`
	Offsets    []Offset `json:"offsets"`
	Partitions [][2]any `json:"partitions"`
}

// Asked is the partitions of a `committed` command.
func (c Command) Asked() (Partitions, error) {
	ps := Partitions{}
	for _, tp := range c.Partitions {
		t, ok := tp[0].(string)
		p, ok2 := tp[1].(float64)
		if !ok || !ok2 {
			return nil, fmt.Errorf("not a [topic, partition]: %v", tp)
		}
		ps[t] = append(ps[t], int32(p))
	}
	return ps, nil
}

// Commands is a channel fed with the decoded stdin commands; EOF on stdin becomes a close.
func Commands() <-chan Command {
	commands := make(chan Command, 16)
	go func() {
		scanner := bufio.NewScanner(os.Stdin)
		scanner.Buffer(make([]byte, 1<<20), 1<<24)
		for scanner.Scan() {
			line := strings.TrimSpace(scanner.Text())
			if line == "" {
				continue
			}
			var c Command
			if err := json.Unmarshal([]byte(line), &c); err != nil {
				Emit("error", Fields{"message": "bad command " + line + ": " + err.Error()})
				continue
			}
			commands <- c
		}
		commands <- Command{Cmd: "close"}
	}()
	return commands
}

// Positions is the consumed position of each partition: the offset after the last record
// reported. Records are added as the client hands them over and reported in one `records`
// event per Flush; the rebalance callbacks flush first, so a record is always reported
// before the revocation or assignment that follows it. Safe for concurrent use.
type Positions struct {
	mu      sync.Mutex
	next    map[[2]any]int64
	pending [][4]any
}

// NewPositions is an empty ledger.
func NewPositions() *Positions { return &Positions{next: map[[2]any]int64{}} }

// Add records one record handed over by the client.
func (p *Positions) Add(topic string, partition int32, offset int64, key []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next[[2]any{topic, partition}] = offset + 1
	var k any
	if key != nil {
		k = strings.ToValidUTF8(string(key), "\uFFFD")
	}
	p.pending = append(p.pending, [4]any{topic, partition, offset, k})
}

// Flush reports the records added since the last flush.
func (p *Positions) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pending) > 0 {
		Emit("records", Fields{"records": p.pending})
		p.pending = nil
	}
}

// Of is the consumed positions of those of `partitions` with records.
func (p *Positions) Of(partitions Partitions) []Offset {
	p.mu.Lock()
	defer p.mu.Unlock()
	var offsets []Offset
	for t, parts := range partitions {
		for _, q := range parts {
			if o, ok := p.next[[2]any{t, q}]; ok {
				offsets = append(offsets, Offset{t, q, o})
			}
		}
	}
	return SortOffsets(offsets)
}

// Forget drops the positions of revoked partitions, so a later commit_consumed commits only
// partitions the consumer holds.
func (p *Positions) Forget(partitions Partitions) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for t, parts := range partitions {
		for _, q := range parts {
			delete(p.next, [2]any{t, q})
		}
	}
}

// ByTopic groups offsets as the clients' commit calls take them.
func ByTopic(offsets []Offset) map[string]map[int32]int64 {
	m := map[string]map[int32]int64{}
	for _, o := range offsets {
		if m[o.Topic] == nil {
			m[o.Topic] = map[int32]int64{}
		}
		m[o.Topic][o.Partition] = o.Offset
	}
	return m
}
