// One kafka-go (github.com/segmentio/kafka-go) group member speaking the agent protocol of
// tests/clients/agents/common.py, with the balancers named by --strategy (range, roundrobin,
// rack-affinity).
//
// kafka-go's Reader joins a group but tells the application nothing about its assignment, so
// the agent drives kafka.ConsumerGroup, the API the Reader is built on: each Generation is one
// eager assignment (Generation.Assignments, reported as `assigned` with Generation.MemberID
// and ID), and it ends when its context does (a heartbeat answered REBALANCE_IN_PROGRESS, or
// Close): the agent then stops its partition readers and reports `revoked` of everything,
// before kafka-go joins again. With --report-records each assigned partition is read by a
// kafka.Reader of that partition from the generation's offset (committed, else the first),
// as kafka-go's ConsumerGroup documentation shows. Commits are Generation.CommitOffsets (the
// generation's OffsetCommit); committed offsets are read with kafka.Client.OffsetFetch.
//
// kafka-go marks its Subscription version 1 without the owned partitions that version adds
// (segmentio/kafka-go#1156): the host reads it as version 0.
package main

import (
	"context"
	"errors"
	"log"
	"os"
	"sync"
	"time"

	"assignor-host/tests/clients/go/agent"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/plain"
)

func balancer(name string) kafka.GroupBalancer {
	switch name {
	case "range":
		return kafka.RangeGroupBalancer{}
	case "roundrobin":
		return kafka.RoundRobinGroupBalancer{}
	case "rack-affinity":
		return kafka.RackAffinityGroupBalancer{}
	}
	agent.Fatal("kafka-go has no balancer " + name)
	return nil
}

type member struct {
	args      agent.Args
	dialer    *kafka.Dialer
	logger    kafka.Logger
	positions *agent.Positions
	mu        sync.Mutex
	gen       *kafka.Generation
}

// run serves one generation until it ends: reports it, reads its partitions, and reports
// their revocation once every reader has stopped.
func (m *member) run(gen *kafka.Generation) {
	since, sinceNs := agent.Stamp()
	held := agent.Partitions{}
	for topic, assigned := range gen.Assignments {
		for _, a := range assigned {
			held[topic] = append(held[topic], int32(a.ID))
		}
	}
	m.positions.Flush()
	m.mu.Lock()
	m.gen = gen
	m.mu.Unlock()
	agent.Emit("assigned", agent.Fields{
		"member_id": gen.MemberID, "generation": gen.ID, "partitions": held.List(),
		"added": held.List(), "since": since, "since_ns": sinceNs,
	})
	gen.Start(func(ctx context.Context) {
		var readers sync.WaitGroup
		if m.args.ReportRecords {
			for topic, assigned := range gen.Assignments {
				for _, a := range assigned {
					readers.Add(1)
					go func() {
						defer readers.Done()
						m.read(ctx, topic, a)
					}()
				}
			}
		}
		<-ctx.Done()
		readers.Wait()
		m.positions.Flush()
		m.mu.Lock()
		m.gen = nil
		m.mu.Unlock()
		m.positions.Forget(held)
		at, atNs := agent.Stamp()
		agent.Emit("revoked", agent.Fields{
			"member_id": gen.MemberID, "partitions": held.List(), "at": at, "at_ns": atNs,
		})
	})
}

// read reads one assigned partition until the generation ends.
func (m *member) read(ctx context.Context, topic string, a kafka.PartitionAssignment) {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: m.args.Bootstrap, Topic: topic, Partition: a.ID, Dialer: m.dialer,
		MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 500 * time.Millisecond, ErrorLogger: m.logger,
	})
	defer r.Close()
	if err := r.SetOffset(a.Offset); err != nil {
		agent.Emit("error", agent.Fields{"message": "set offset: " + err.Error()})
		return
	}
	for {
		msg, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() == nil {
				agent.Emit("error", agent.Fields{"message": "fetch: " + err.Error()})
			}
			return
		}
		m.positions.Add(msg.Topic, int32(msg.Partition), msg.Offset, msg.Key)
		m.positions.Flush()
	}
}

func (m *member) current() *kafka.Generation {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gen
}

func (m *member) commit(offsets []agent.Offset) error {
	gen := m.current()
	if gen == nil {
		return errors.New("no generation (between rebalances)")
	}
	byTopic := map[string]map[int]int64{}
	for t, parts := range agent.ByTopic(offsets) {
		byTopic[t] = map[int]int64{}
		for p, o := range parts {
			byTopic[t][int(p)] = o
		}
	}
	return gen.CommitOffsets(byTopic)
}

func main() {
	args := agent.ParseArgs()
	args.Refuse("kafka-go", map[string]bool{
		"group-protocol":   args.GroupProtocol != "classic",
		"remote-assignor":  args.RemoteAssignor != "",
		"instance-id":      args.InstanceID != "",
		"commit-on-revoke": args.CommitOnRevoke,
		"rack":             args.Rack != "",
	})
	errorLog := kafka.LoggerFunc(log.New(os.Stderr, "[kafka-go] ", log.LstdFlags|log.Lmicroseconds).Printf)
	var debugLog kafka.Logger
	if agent.Debug() {
		debugLog = errorLog
	}
	clientID := args.ClientID
	if clientID == "" {
		clientID = "kafka-go"
	}
	dialer := &kafka.Dialer{ClientID: clientID, Timeout: 10 * time.Second, DualStack: true}
	if args.SaslMechanism == "SCRAM-SHA-512" {
		agent.Fatal("kafka-go: this agent logs in with PLAIN (its SCRAM needs xdg-go/scram)")
	}
	if args.SaslMechanism != "" {
		dialer.SASLMechanism = plain.Mechanism{Username: args.SaslUser, Password: args.SaslPassword}
	}
	dialer.TLS = args.TLS
	strategies := args.Strategies
	if len(strategies) == 0 {
		strategies = []string{"range"}
	}
	var balancers []kafka.GroupBalancer
	for _, s := range strategies {
		balancers = append(balancers, balancer(s))
	}
	rebalanceTimeout := 30 * time.Second
	if args.RebalanceTimeoutMs > 0 {
		rebalanceTimeout = time.Duration(args.RebalanceTimeoutMs) * time.Millisecond
	}
	group, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:             args.Group,
		Brokers:        args.Bootstrap,
		Dialer:         dialer,
		Topics:         args.Topics,
		GroupBalancers: balancers,
		// Kafka's lower bound (group.min.session.timeout.ms) is 6000; the host enforces it.
		SessionTimeout:    6 * time.Second,
		HeartbeatInterval: 500 * time.Millisecond,
		RebalanceTimeout:  rebalanceTimeout,
		StartOffset:       kafka.FirstOffset,
		Logger:            debugLog,
		ErrorLogger:       errorLog,
	})
	if err != nil {
		agent.Fatal("kafka.NewConsumerGroup: " + err.Error())
	}
	m := &member{args: args, dialer: dialer, logger: errorLog, positions: agent.NewPositions()}
	go func() {
		for {
			gen, err := group.Next(context.Background())
			switch {
			case err == nil:
				m.run(gen)
			case errors.Is(err, kafka.ErrGroupClosed):
				return
			case errors.Is(err, kafka.RebalanceInProgress):
				// kafka-go reports it and joins again at once (ConsumerGroup.run), keeping
				// its member id: a rebalance, not a failure.
				log.Printf("[kafka-go agent] Next: %v", err)
			default:
				agent.Emit("error", agent.Fields{"message": "next generation: " + err.Error()})
			}
		}
	}()

	kc := &kafka.Client{Addr: kafka.TCP(args.Bootstrap...), Timeout: 30 * time.Second}
	if dialer.SASLMechanism != nil || dialer.TLS != nil {
		// The Client (committed offsets) dials through its Transport, not the group's Dialer.
		kc.Transport = &kafka.Transport{SASL: dialer.SASLMechanism, TLS: dialer.TLS, ClientID: clientID}
	}
	for cmd := range agent.Commands() {
		switch cmd.Cmd {
		case "commit":
			if err := m.commit(cmd.Offsets); err != nil {
				agent.Emit("error", agent.Fields{"message": "commit failed: " + err.Error()})
			} else {
				agent.Emit("committed", agent.Fields{"offsets": agent.SortOffsets(cmd.Offsets)})
			}
		case "commit_consumed":
			var offsets []agent.Offset
			if gen := m.current(); gen != nil {
				held := agent.Partitions{}
				for topic, assigned := range gen.Assignments {
					for _, a := range assigned {
						held[topic] = append(held[topic], int32(a.ID))
					}
				}
				offsets = m.positions.Of(held)
			}
			var err error
			if len(offsets) > 0 {
				err = m.commit(offsets)
			}
			if err != nil {
				agent.Emit("error", agent.Fields{"message": "commit failed: " + err.Error()})
			} else {
				agent.Emit("committed", agent.Fields{"offsets": offsets})
			}
		case "committed":
			asked, err := cmd.Asked()
			topics := map[string][]int{}
			for t, parts := range asked {
				for _, p := range parts {
					topics[t] = append(topics[t], int(p))
				}
			}
			var got *kafka.OffsetFetchResponse
			if err == nil {
				got, err = kc.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: args.Group, Topics: topics})
			}
			if err == nil {
				err = got.Error
			}
			if err != nil {
				agent.Emit("error", agent.Fields{"message": "committed: " + err.Error()})
				continue
			}
			agent.Fetched(asked, func(t string, p int32) (int64, bool) {
				for _, fp := range got.Topics[t] {
					if fp.Partition == int(p) && fp.Error == nil {
						return fp.CommittedOffset, true
					}
				}
				return -1, false
			})
		case "close":
			// Ends the generation (its readers stop, `revoked`) and leaves the group.
			if err := group.Close(); err != nil {
				agent.Emit("error", agent.Fields{"message": "close: " + err.Error()})
			}
			at, atNs := agent.Stamp()
			agent.Emit("closed", agent.Fields{"at": at, "at_ns": atNs})
			return
		default:
			agent.Emit("error", agent.Fields{"message": "unknown command " + cmd.Cmd})
		}
	}
}
