// One franz-go (github.com/twmb/franz-go, kgo) group consumer speaking the agent protocol of
// tests/clients/agents/common.py, with the classic group protocol and the balancers named by
// --strategy (cooperative-sticky, sticky, range, roundrobin), or KIP-848's consumer protocol
// (--group-protocol consumer: kgo.ServerSideBalancer, where franz-go names the server-side
// assignor by its balancer: range for RangeBalancer, uniform for StickyBalancer, so
// --remote-assignor picks one of those two).
//
// The assignment reported is the consumer's whole assignment, kept here from franz-go's own
// callbacks: OnPartitionsAssigned hands over what was added (everything under an eager
// balancer), OnPartitionsRevoked and OnPartitionsLost what was taken away. `assigned` is
// stamped before its partitions are taken (franz-go calls OnPartitionsAssigned before it
// fetches their offsets), `revoked` after they are given up, so ownership intervals are
// conservative. The member id and generation (the member epoch under KIP-848) are
// kgo.Client.GroupMetadata's.
//
// BlockRebalanceOnPoll: a rebalance callback waits until the records of the poll being
// handled are reported (AllowRebalance), so a record is always reported before the
// revocation that follows it, and a revoke commit covers every record handed over.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"assignor-host/tests/clients/go/agent"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func balancer(name string) kgo.GroupBalancer {
	switch name {
	case "cooperative-sticky":
		return kgo.CooperativeStickyBalancer()
	case "sticky":
		return kgo.StickyBalancer()
	case "range":
		return kgo.RangeBalancer()
	case "roundrobin":
		return kgo.RoundRobinBalancer()
	}
	agent.Fatal("franz-go has no balancer " + name)
	return nil
}

// consumer is the agent's state shared by the poll loop and franz-go's callbacks.
type consumer struct {
	args      agent.Args
	positions *agent.Positions
	mu        sync.Mutex
	held      agent.Partitions
}

func (c *consumer) onAssigned(_ context.Context, cl *kgo.Client, added map[string][]int32) {
	since, sinceNs := agent.Stamp()
	c.positions.Flush()
	member, generation := cl.GroupMetadata()
	c.mu.Lock()
	c.held.Add(added)
	whole := c.held.List()
	c.mu.Unlock()
	agent.Emit("assigned", agent.Fields{
		"member_id": member, "generation": generation, "partitions": whole,
		"added": agent.Partitions(added).List(), "since": since, "since_ns": sinceNs,
	})
}

// onRevoked serves both revocation and loss (`lost`: the session ended without a revoke,
// e.g. the member was fenced, so nothing may be committed).
func (c *consumer) onRevoked(lost bool) func(context.Context, *kgo.Client, map[string][]int32) {
	return func(ctx context.Context, cl *kgo.Client, gone map[string][]int32) {
		c.positions.Flush()
		if c.args.CommitOnRevoke && !lost {
			offsets := c.positions.Of(gone)
			var message any
			if err := commit(ctx, cl, offsets); err != nil {
				message = err.Error()
			}
			agent.Emit("revoke_commit", agent.Fields{"offsets": offsets, "error": message})
		}
		c.positions.Forget(gone)
		c.mu.Lock()
		c.held.Remove(gone)
		c.mu.Unlock()
		member, _ := cl.GroupMetadata()
		at, atNs := agent.Stamp()
		agent.Emit("revoked", agent.Fields{
			"member_id": member, "partitions": agent.Partitions(gone).List(), "lost": lost,
			"at": at, "at_ns": atNs,
		})
	}
}

// commit commits `offsets` as this member (CommitOffsetsSync: the group's generation, or
// member epoch) and fails on any partition's error.
func commit(ctx context.Context, cl *kgo.Client, offsets []agent.Offset) error {
	if len(offsets) == 0 {
		return nil
	}
	uncommitted := map[string]map[int32]kgo.EpochOffset{}
	for t, parts := range agent.ByTopic(offsets) {
		uncommitted[t] = map[int32]kgo.EpochOffset{}
		for p, o := range parts {
			uncommitted[t][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
		}
	}
	var failed error
	cl.CommitOffsetsSync(ctx, uncommitted,
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				failed = err
				return
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						failed = errors.Join(failed, fmt.Errorf("%s[%d]: %w", t.Topic, p.Partition, err))
					}
				}
			}
		})
	return failed
}

func main() {
	args := agent.ParseArgs()
	args.Refuse("franz-go", map[string]bool{"instance-id": args.InstanceID != ""})
	c := &consumer{args: args, positions: agent.NewPositions(), held: agent.Partitions{}}

	level := kgo.LogLevelWarn
	if agent.Debug() {
		level = kgo.LogLevelDebug
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(args.Bootstrap...),
		kgo.ConsumerGroup(args.Group),
		kgo.ConsumeTopics(args.Topics...),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(c.onAssigned),
		kgo.OnPartitionsRevoked(c.onRevoked(false)),
		kgo.OnPartitionsLost(c.onRevoked(true)),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, level, nil)),
	}
	if args.ClientID != "" {
		opts = append(opts, kgo.ClientID(args.ClientID))
	}
	switch args.SaslMechanism {
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: args.SaslUser, Pass: args.SaslPassword}.AsMechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: args.SaslUser, Pass: args.SaslPassword}.AsSha512Mechanism()))
	}
	if args.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(args.TLS))
	}
	if args.Rack != "" {
		opts = append(opts, kgo.Rack(args.Rack))
	}
	if args.RebalanceTimeoutMs > 0 {
		opts = append(opts, kgo.RebalanceTimeout(time.Duration(args.RebalanceTimeoutMs)*time.Millisecond))
	}
	switch args.GroupProtocol {
	case "classic":
		if args.RemoteAssignor != "" {
			agent.Fatal("--remote-assignor needs --group-protocol consumer")
		}
		strategies := args.Strategies
		if len(strategies) == 0 {
			strategies = []string{"cooperative-sticky"}
		}
		var balancers []kgo.GroupBalancer
		for _, s := range strategies {
			balancers = append(balancers, balancer(s))
		}
		opts = append(opts, kgo.Balancers(balancers...),
			// Kafka's lower bound (group.min.session.timeout.ms) is 6000; the host enforces it.
			kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))
	case "consumer":
		// franz-go sends the assignor its balancer stands for (manage848): no other name.
		server := map[string]string{"range": "range", "uniform": "sticky", "": "range"}
		name, ok := server[args.RemoteAssignor]
		if !ok || len(args.Strategies) > 0 {
			agent.Fatal("franz-go's consumer protocol names only range (RangeBalancer) or " +
				"uniform (StickyBalancer), through --remote-assignor")
		}
		opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(balancer(name)))
	default:
		agent.Fatal("unknown --group-protocol " + args.GroupProtocol)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		agent.Fatal("kgo.NewClient: " + err.Error())
	}
	admin := kadm.NewClient(cl)
	commands := agent.Commands()
	ctx := context.Background()

	for {
		pollCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		fetches := cl.PollRecords(pollCtx, 500)
		cancel()
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, kgo.ErrClientClosed) {
				agent.Emit("error", agent.Fields{"message": fmt.Sprintf("fetch %s[%d]: %v", t, p, err)})
			}
		})
		if args.ReportRecords {
			fetches.EachRecord(func(r *kgo.Record) {
				c.positions.Add(r.Topic, r.Partition, r.Offset, r.Key)
			})
		}
		c.positions.Flush()
	drain:
		for {
			select {
			case cmd := <-commands:
				if done := handle(ctx, c, cl, admin, cmd); done {
					return
				}
			default:
				break drain
			}
		}
		cl.AllowRebalance()
	}
}

// handle runs one command; true after close.
func handle(ctx context.Context, c *consumer, cl *kgo.Client, admin *kadm.Client, cmd agent.Command) bool {
	switch cmd.Cmd {
	case "commit":
		if err := commit(ctx, cl, cmd.Offsets); err != nil {
			agent.Emit("error", agent.Fields{"message": "commit failed: " + err.Error()})
		} else {
			agent.Emit("committed", agent.Fields{"offsets": agent.SortOffsets(cmd.Offsets)})
		}
	case "commit_consumed":
		c.mu.Lock()
		held := c.held.Clone()
		c.mu.Unlock()
		offsets := c.positions.Of(held)
		if err := commit(ctx, cl, offsets); err != nil {
			agent.Emit("error", agent.Fields{"message": "commit failed: " + err.Error()})
		} else {
			agent.Emit("committed", agent.Fields{"offsets": offsets})
		}
	case "committed":
		asked, err := cmd.Asked()
		if err != nil {
			agent.Emit("error", agent.Fields{"message": "committed: " + err.Error()})
			return false
		}
		got, err := admin.FetchOffsets(ctx, c.args.Group)
		if err == nil {
			err = got.Error()
		}
		if err != nil {
			agent.Emit("error", agent.Fields{"message": "committed: " + err.Error()})
			return false
		}
		agent.Fetched(asked, func(t string, p int32) (int64, bool) {
			o, ok := got.Lookup(t, p)
			return o.At, ok
		})
	case "close":
		// Leaves the group (after a last OnPartitionsRevoked); AllowRebalance first, as
		// BlockRebalanceOnPoll asks.
		cl.CloseAllowingRebalance()
		at, atNs := agent.Stamp()
		agent.Emit("closed", agent.Fields{"at": at, "at_ns": atNs})
		return true
	default:
		agent.Emit("error", agent.Fields{"message": "unknown command " + cmd.Cmd})
	}
	return false
}
