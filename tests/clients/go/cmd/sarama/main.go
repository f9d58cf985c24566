// One sarama (github.com/IBM/sarama) group consumer speaking the agent protocol of
// tests/clients/agents/common.py, with the eager strategies named by --strategy (range,
// roundrobin, sticky; Config.Consumer.Group.Rebalance.GroupStrategies).
//
// Under an eager strategy a sarama session is one generation: ConsumerGroupHandler.Setup
// gets the session with its claims (the whole assignment, reported as `assigned`, stamped
// before any claim is consumed), and Cleanup runs once every ConsumeClaim has returned
// (reported as `revoked` of every claim, stamped then). The member id and generation are the
// session's.
//
// Commits go through the session's offset manager, as an application's do: MarkOffset and
// ResetOffset (the one moves an offset forward only, the other back only) then Commit. Commit
// reports no error (sarama sends failures to Errors(), some only to its log, and retries
// some later), so the agent reads the offsets back (ClusterAdmin.ListConsumerGroupOffsets,
// OffsetFetch) and reports `committed` only when they are there.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"assignor-host/tests/clients/go/agent"

	"github.com/IBM/sarama"
)

func strategy(name string) sarama.BalanceStrategy {
	switch name {
	case "range":
		return sarama.NewBalanceStrategyRange()
	case "roundrobin":
		return sarama.NewBalanceStrategyRoundRobin()
	case "sticky":
		return sarama.NewBalanceStrategySticky()
	}
	agent.Fatal("the sarama agent has no strategy " + name +
		" (eager strategies only: range, roundrobin, sticky)")
	return nil
}

// handler is sarama's ConsumerGroupHandler; it also holds the live session for commands.
type handler struct {
	args      agent.Args
	positions *agent.Positions
	mu        sync.Mutex
	session   sarama.ConsumerGroupSession
}

func (h *handler) Setup(s sarama.ConsumerGroupSession) error {
	since, sinceNs := agent.Stamp()
	h.positions.Flush()
	h.mu.Lock()
	h.session = s
	h.mu.Unlock()
	claims := agent.Partitions(s.Claims()).List()
	agent.Emit("assigned", agent.Fields{
		"member_id": s.MemberID(), "generation": s.GenerationID(), "partitions": claims,
		"added": claims, "since": since, "since_ns": sinceNs,
	})
	return nil
}

func (h *handler) Cleanup(s sarama.ConsumerGroupSession) error {
	h.positions.Flush()
	h.mu.Lock()
	h.session = nil
	h.mu.Unlock()
	claims := agent.Partitions(s.Claims())
	h.positions.Forget(claims)
	at, atNs := agent.Stamp()
	agent.Emit("revoked", agent.Fields{
		"member_id": s.MemberID(), "partitions": claims.List(), "at": at, "at_ns": atNs,
	})
	return nil
}

func (h *handler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case <-s.Context().Done():
			return nil
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			if h.args.ReportRecords {
				h.positions.Add(m.Topic, m.Partition, m.Offset, m.Key)
				h.positions.Flush()
			}
		}
	}
}

func (h *handler) current() sarama.ConsumerGroupSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.session
}

// commit commits `offsets` through the live session and reads them back.
func (h *handler) commit(admin sarama.ClusterAdmin, offsets []agent.Offset) error {
	s := h.current()
	if s == nil {
		return errors.New("no session (between generations)")
	}
	claims := agent.Partitions(s.Claims())
	for _, o := range offsets {
		if !claims.Has(o.Topic, o.Partition) {
			return fmt.Errorf("%s[%d] is not claimed by this member", o.Topic, o.Partition)
		}
		s.MarkOffset(o.Topic, o.Partition, o.Offset, "")
		s.ResetOffset(o.Topic, o.Partition, o.Offset, "")
	}
	s.Commit()
	asked := agent.Partitions{}
	for _, o := range offsets {
		asked[o.Topic] = append(asked[o.Topic], o.Partition)
	}
	got, err := admin.ListConsumerGroupOffsets(h.args.Group, asked)
	if err != nil {
		return fmt.Errorf("reading the commit back: %w", err)
	}
	for _, o := range offsets {
		block := got.GetBlock(o.Topic, o.Partition)
		if block == nil || block.Offset != o.Offset {
			return fmt.Errorf("%s[%d] reads back as %+v after the commit of %d", o.Topic, o.Partition, block, o.Offset)
		}
	}
	return nil
}

func main() {
	args := agent.ParseArgs()
	args.Refuse("sarama", map[string]bool{
		"group-protocol":   args.GroupProtocol != "classic",
		"remote-assignor":  args.RemoteAssignor != "",
		"commit-on-revoke": args.CommitOnRevoke,
	})
	sarama.Logger = log.New(os.Stderr, "[sarama] ", log.LstdFlags|log.Lmicroseconds)
	if agent.Debug() {
		sarama.DebugLogger = sarama.Logger
	}
	cfg := sarama.NewConfig()
	if args.ClientID != "" {
		cfg.ClientID = args.ClientID
	}
	if args.SaslMechanism == "SCRAM-SHA-512" {
		agent.Fatal("sarama: SCRAM needs a SCRAM client of its own (xdg-go/scram); this agent logs in with PLAIN")
	}
	if args.TLS != nil {
		cfg.Net.TLS.Enable = true
		cfg.Net.TLS.Config = args.TLS
	}
	if args.SaslMechanism != "" {
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
		cfg.Net.SASL.User, cfg.Net.SASL.Password = args.SaslUser, args.SaslPassword
		// SaslHandshake v1 then SaslAuthenticate (KIP-152): Kafka's and the host's way; v0
		// sends the tokens unframed, which the host refuses.
		cfg.Net.SASL.Version = sarama.SASLHandshakeV1
	}
	strategies := args.Strategies
	if len(strategies) == 0 {
		strategies = []string{"range"}
	}
	// In place of sarama's default list (range).
	cfg.Consumer.Group.Rebalance.GroupStrategies = nil
	for _, s := range strategies {
		cfg.Consumer.Group.Rebalance.GroupStrategies = append(cfg.Consumer.Group.Rebalance.GroupStrategies, strategy(s))
	}
	// Kafka's lower bound (group.min.session.timeout.ms) is 6000; the host enforces it.
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	if args.RebalanceTimeoutMs > 0 {
		cfg.Consumer.Group.Rebalance.Timeout = time.Duration(args.RebalanceTimeoutMs) * time.Millisecond
	}
	cfg.Consumer.Group.InstanceId = args.InstanceID
	cfg.RackID = args.Rack
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Return.Errors = true

	client, err := sarama.NewClient(args.Bootstrap, cfg)
	if err != nil {
		agent.Fatal("sarama.NewClient: " + err.Error())
	}
	group, err := sarama.NewConsumerGroupFromClient(args.Group, client)
	if err != nil {
		agent.Fatal("sarama.NewConsumerGroupFromClient: " + err.Error())
	}
	// A client of its own: ClusterAdmin's Close closes the client it is made from.
	admin, err := sarama.NewClusterAdmin(args.Bootstrap, cfg)
	if err != nil {
		agent.Fatal("sarama.NewClusterAdmin: " + err.Error())
	}
	go func() {
		for err := range group.Errors() {
			agent.Emit("error", agent.Fields{"message": err.Error()})
		}
	}()

	h := &handler{args: args, positions: agent.NewPositions()}
	ctx, cancel := context.WithCancel(context.Background())
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		// One Consume per generation (sarama's own example loop).
		for ctx.Err() == nil {
			if err := group.Consume(ctx, args.Topics, h); err != nil {
				if errors.Is(err, sarama.ErrClosedConsumerGroup) {
					return
				}
				agent.Emit("error", agent.Fields{"message": "consume: " + err.Error()})
				return
			}
		}
	}()

	for cmd := range agent.Commands() {
		switch cmd.Cmd {
		case "commit":
			if err := h.commit(admin, cmd.Offsets); err != nil {
				agent.Emit("error", agent.Fields{"message": "commit failed: " + err.Error()})
			} else {
				agent.Emit("committed", agent.Fields{"offsets": agent.SortOffsets(cmd.Offsets)})
			}
		case "commit_consumed":
			var offsets []agent.Offset
			if s := h.current(); s != nil {
				offsets = h.positions.Of(s.Claims())
			}
			var err error
			if len(offsets) > 0 {
				err = h.commit(admin, offsets)
			}
			if err != nil {
				agent.Emit("error", agent.Fields{"message": "commit failed: " + err.Error()})
			} else {
				agent.Emit("committed", agent.Fields{"offsets": offsets})
			}
		case "committed":
			asked, err := cmd.Asked()
			var got *sarama.OffsetFetchResponse
			if err == nil {
				got, err = admin.ListConsumerGroupOffsets(args.Group, asked)
			}
			if err != nil {
				agent.Emit("error", agent.Fields{"message": "committed: " + err.Error()})
				continue
			}
			agent.Fetched(asked, func(t string, p int32) (int64, bool) {
				block := got.GetBlock(t, p)
				return blockOffset(block), block != nil
			})
		case "close":
			// Ends the session (Cleanup) and leaves the group (LeaveGroup).
			cancel()
			if err := group.Close(); err != nil {
				agent.Emit("error", agent.Fields{"message": "close: " + err.Error()})
			}
			<-consumed
			_ = admin.Close()
			at, atNs := agent.Stamp()
			agent.Emit("closed", agent.Fields{"at": at, "at_ns": atNs})
			return
		default:
			agent.Emit("error", agent.Fields{"message": "unknown command " + cmd.Cmd})
		}
	}
}

func blockOffset(b *sarama.OffsetFetchResponseBlock) int64 {
	if b == nil {
		return -1
	}
	return b.Offset
}
