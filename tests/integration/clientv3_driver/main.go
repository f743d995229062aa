// clientv3_driver: etcd's own Go client library (go.etcd.io/etcd/clientv3 and its concurrency recipes,
// from Debian's golang-etcd-server-dev) driving one scenario against one endpoint:
//
//	clientv3_driver <host:port> watch|lease|lock|election
//
// Prints "ok" and exits 0 when every expectation held; otherwise prints what differed and exits 1.
// tests/integration/clientv3_test.cc runs each scenario against revkv and against etcd 3.4.
package main

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
	"go.etcd.io/etcd/etcdserver/api/v3election/v3electionpb"
	"go.etcd.io/etcd/etcdserver/api/v3lock/v3lockpb"
	"go.etcd.io/etcd/etcdserver/api/v3rpc/rpctypes"
)

func fail(format string, args ...interface{}) {
	fmt.Printf("FAIL: "+format+"\n", args...)
	os.Exit(1)
}

func check(err error, what string) {
	if err != nil {
		fail("%s: %v", what, err)
	}
}

func expect(got, want interface{}, what string) {
	if !reflect.DeepEqual(got, want) {
		fail("%s: got %v, want %v", what, got, want)
	}
}

var endpoint string

func client() *clientv3.Client {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	check(err, "connect")
	return c
}

func timeout(d time.Duration) context.Context {
	ctx, _ := context.WithTimeout(context.Background(), d) //nolint: the scenario ends with the process
	return ctx
}

// exists reports whether `key` is there.
func exists(c *clientv3.Client, key string) bool {
	r, err := c.Get(timeout(5*time.Second), key)
	check(err, "get "+key)
	return len(r.Kvs) == 1
}

// eventually polls `cond` every 20 ms for up to `d`.
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}

func describe(e *clientv3.Event) string {
	s := fmt.Sprintf("%s %s=%s@%d", e.Type, e.Kv.Key, e.Kv.Value, e.Kv.ModRevision)
	if e.PrevKv != nil {
		s += " prev=" + string(e.PrevKv.Value)
	}
	return s
}

// watch: history from a past revision with previous key-values, a live watch, a compacted start.
func watchScenario() {
	c := client()
	defer c.Close()
	ctx := timeout(30 * time.Second)
	r, err := c.Put(ctx, "w/a", "1")
	check(err, "put")
	start := r.Header.Revision
	_, err = c.Put(ctx, "w/b", "2")
	check(err, "put")
	_, err = c.Put(ctx, "w/a", "3")
	check(err, "put")
	_, err = c.Delete(ctx, "w/b")
	check(err, "delete")

	wctx, wcancel := context.WithCancel(ctx)
	var got []string
	for resp := range c.Watch(wctx, "w/", clientv3.WithPrefix(), clientv3.WithRev(start), clientv3.WithPrevKV()) {
		check(resp.Err(), "watch from the past")
		for _, e := range resp.Events {
			got = append(got, describe(e))
		}
		if len(got) >= 4 {
			break
		}
	}
	wcancel()
	expect(got, []string{
		fmt.Sprintf("PUT w/a=1@%d", start),
		fmt.Sprintf("PUT w/b=2@%d", start+1),
		fmt.Sprintf("PUT w/a=3@%d prev=1", start+2),
		fmt.Sprintf("DELETE w/b=@%d prev=2", start+3),
	}, "events from the past")

	// A live watch sees a put made after it was created.
	lctx, lcancel := context.WithCancel(ctx)
	live := c.Watch(lctx, "w/", clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	created := <-live
	check(created.Err(), "live watch")
	if !created.Created {
		fail("live watch: first response is not the created notification: %+v", created)
	}
	p, err := c.Put(ctx, "w/c", "4")
	check(err, "put")
	resp := <-live
	check(resp.Err(), "live watch")
	got = nil
	for _, e := range resp.Events {
		got = append(got, describe(e))
	}
	expect(got, []string{fmt.Sprintf("PUT w/c=4@%d", p.Header.Revision)}, "live events")
	lcancel()

	// A start revision that was compacted: canceled with the compaction's revision.
	_, err = c.Compact(ctx, start+2)
	check(err, "compact")
	cctx, ccancel := context.WithCancel(ctx)
	resp = <-c.Watch(cctx, "w/", clientv3.WithPrefix(), clientv3.WithRev(start))
	ccancel()
	if resp.CompactRevision != start+2 || resp.Err() != rpctypes.ErrCompacted {
		fail("compacted watch: compact_revision %d (want %d), err %v", resp.CompactRevision, start+2, resp.Err())
	}
}

// lease: grant, attach, TimeToLive with keys, Leases, KeepAliveOnce, ignore_lease, Txn compare on the
// lease, a KeepAlive stream holding a short lease, revoke, and etcd's errors.
func leaseScenario() {
	c := client()
	defer c.Close()
	ctx := timeout(60 * time.Second)
	g, err := c.Grant(ctx, 60)
	check(err, "grant")
	expect(g.TTL, int64(60), "granted TTL")
	_, err = c.Put(ctx, "l/a", "1", clientv3.WithLease(g.ID))
	check(err, "put with lease")
	_, err = c.Put(ctx, "l/b", "2", clientv3.WithLease(g.ID))
	check(err, "put with lease")
	_, err = c.Put(ctx, "l/c", "3")
	check(err, "put")
	t, err := c.TimeToLive(ctx, g.ID, clientv3.WithAttachedKeys())
	check(err, "timetolive")
	var keys []string
	for _, k := range t.Keys {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	expect(keys, []string{"l/a", "l/b"}, "attached keys")
	expect(t.GrantedTTL, int64(60), "granted TTL from TimeToLive")
	if t.TTL < 55 || t.TTL > 60 {
		fail("TimeToLive TTL %d", t.TTL)
	}
	ls, err := c.Leases(ctx)
	check(err, "leases")
	found := false
	for _, l := range ls.Leases {
		found = found || l.ID == g.ID
	}
	if !found {
		fail("Leases does not list %x: %+v", g.ID, ls.Leases)
	}
	ka, err := c.KeepAliveOnce(ctx, g.ID)
	check(err, "keep-alive once")
	expect(ka.TTL, int64(60), "keep-alive TTL")

	// ignore_lease keeps the key's lease; a plain put detaches it.
	_, err = c.Put(ctx, "l/a", "1b", clientv3.WithIgnoreLease())
	check(err, "put ignore_lease")
	a, err := c.Get(ctx, "l/a")
	check(err, "get")
	expect(clientv3.LeaseID(a.Kvs[0].Lease), g.ID, "lease kept by ignore_lease")
	expect(string(a.Kvs[0].Value), "1b", "value put with ignore_lease")
	_, err = c.Put(ctx, "l/x", "1", clientv3.WithIgnoreLease())
	expect(err, rpctypes.ErrKeyNotFound, "ignore_lease on a missing key")
	_, err = c.Put(ctx, "l/a", "1", clientv3.WithIgnoreLease(), clientv3.WithLease(g.ID))
	expect(err, rpctypes.ErrLeaseProvided, "ignore_lease with a lease")

	// Compare on LEASE.
	txn, err := c.Txn(ctx).If(clientv3.Compare(clientv3.LeaseValue("l/a"), "=", g.ID)).
		Then(clientv3.OpPut("l/t", "yes")).Commit()
	check(err, "txn")
	expect(txn.Succeeded, true, "compare lease = its lease")
	txn, err = c.Txn(ctx).If(clientv3.Compare(clientv3.LeaseValue("l/c"), "=", g.ID)).Commit()
	check(err, "txn")
	expect(txn.Succeeded, false, "compare lease of a key without one")

	// The client's keep-alive loop holds a 2-second lease for 4 s; once it stops, the lease expires.
	short, err := c.Grant(ctx, 2)
	check(err, "grant")
	_, err = c.Put(ctx, "l/k", "v", clientv3.WithLease(short.ID))
	check(err, "put")
	kctx, kcancel := context.WithCancel(ctx)
	kch, err := c.KeepAlive(kctx, short.ID)
	check(err, "keep-alive")
	go func() {
		for range kch {
		}
	}()
	time.Sleep(4 * time.Second)
	if !exists(c, "l/k") {
		fail("a lease kept alive expired")
	}
	kcancel()
	if !eventually(8*time.Second, func() bool { return !exists(c, "l/k") }) {
		fail("the key of a lease no longer kept alive is still there")
	}

	// Revoke deletes the attached keys only.
	_, err = c.Revoke(ctx, g.ID)
	check(err, "revoke")
	if exists(c, "l/a") || exists(c, "l/b") || !exists(c, "l/c") {
		fail("revoke did not delete exactly the attached keys")
	}
	t, err = c.TimeToLive(ctx, g.ID)
	check(err, "timetolive of a revoked lease")
	expect(t.TTL, int64(-1), "TTL of a revoked lease")

	// etcd's errors, as the library turns them into its own error values.
	_, err = c.Revoke(ctx, g.ID)
	expect(err, rpctypes.ErrLeaseNotFound, "revoke of a revoked lease")
	_, err = c.Put(ctx, "l/z", "1", clientv3.WithLease(g.ID))
	expect(err, rpctypes.ErrLeaseNotFound, "put with a revoked lease")
	_, err = c.KeepAliveOnce(ctx, g.ID)
	expect(err, rpctypes.ErrLeaseNotFound, "keep-alive of a revoked lease")
	_, err = c.Lease.Grant(ctx, 9000000001)
	expect(err, rpctypes.ErrLeaseTTLTooLarge, "grant of a too large TTL")
}

// lock: the Mutex recipe gives mutual exclusion to concurrent sessions incrementing a counter with a
// read, a pause and a write; the Lock service and the recipe exclude each other; a holder whose
// session's lease expires passes the lock on.
func lockScenario() {
	const workers, rounds = 4, 5
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := client()
			defer c.Close()
			s, err := concurrency.NewSession(c, concurrency.WithTTL(30))
			check(err, "session")
			defer s.Close()
			m := concurrency.NewMutex(s, "go-lock")
			for i := 0; i < rounds; i++ {
				ctx := timeout(60 * time.Second)
				check(m.Lock(ctx), "lock")
				r, err := c.Get(ctx, "go-counter")
				check(err, "get")
				v := 0
				if len(r.Kvs) == 1 {
					v, _ = strconv.Atoi(string(r.Kvs[0].Value))
				}
				time.Sleep(5 * time.Millisecond)
				_, err = c.Put(ctx, "go-counter", strconv.Itoa(v+1))
				check(err, "put")
				check(m.Unlock(ctx), "unlock")
			}
		}()
	}
	wg.Wait()
	c := client()
	defer c.Close()
	ctx := timeout(60 * time.Second)
	r, err := c.Get(ctx, "go-counter")
	check(err, "get")
	expect(string(r.Kvs[0].Value), strconv.Itoa(workers*rounds), "counter")

	// The Lock service holds "mixed"; the recipe waits until the service unlocks.
	g, err := c.Grant(ctx, 30)
	check(err, "grant")
	service := v3lockpb.NewLockClient(c.ActiveConnection())
	held, err := service.Lock(ctx, &v3lockpb.LockRequest{Name: []byte("mixed"), Lease: int64(g.ID)})
	check(err, "Lock service")
	s, err := concurrency.NewSession(c, concurrency.WithTTL(30))
	check(err, "session")
	m := concurrency.NewMutex(s, "mixed")
	locked := make(chan error, 1)
	go func() { locked <- m.Lock(ctx) }()
	select {
	case err := <-locked:
		fail("the recipe took a lock the service holds (%v)", err)
	case <-time.After(500 * time.Millisecond):
	}
	_, err = service.Unlock(ctx, &v3lockpb.UnlockRequest{Key: held.Key})
	check(err, "Unlock service")
	select {
	case err := <-locked:
		check(err, "lock after the service unlocked")
	case <-time.After(10 * time.Second):
		fail("the recipe did not get the lock the service released")
	}
	// And now the service waits for the recipe's holder.
	g2, err := c.Grant(ctx, 30)
	check(err, "grant")
	serviceLocked := make(chan error, 1)
	go func() {
		_, err := service.Lock(ctx, &v3lockpb.LockRequest{Name: []byte("mixed"), Lease: int64(g2.ID)})
		serviceLocked <- err
	}()
	select {
	case err := <-serviceLocked:
		fail("the service took a lock the recipe holds (%v)", err)
	case <-time.After(500 * time.Millisecond):
	}
	check(m.Unlock(ctx), "unlock")
	select {
	case err := <-serviceLocked:
		check(err, "Lock service after the recipe unlocked")
	case <-time.After(10 * time.Second):
		fail("the service did not get the lock the recipe released")
	}

	// A holder whose session stops keeping its lease alive loses the lock when the lease expires.
	short, err := concurrency.NewSession(c, concurrency.WithTTL(2))
	check(err, "session")
	check(concurrency.NewMutex(short, "expiring").Lock(ctx), "lock")
	short.Orphan()
	next := concurrency.NewMutex(s, "expiring")
	began := time.Now()
	check(next.Lock(timeout(15*time.Second)), "lock after the holder's lease expired")
	if time.Since(began) < time.Second {
		fail("the lock passed on after %v, before the holder's lease expired", time.Since(began))
	}
}

// election: Campaign, Leader, Proclaim and Resign hand-over between two sessions, observed in order;
// the Election service sees the recipe's leader; a leader whose lease expires hands over.
func electionScenario() {
	c := client()
	defer c.Close()
	ctx := timeout(60 * time.Second)
	s1, err := concurrency.NewSession(c, concurrency.WithTTL(30))
	check(err, "session")
	s2, err := concurrency.NewSession(c, concurrency.WithTTL(2))
	check(err, "session")
	s3, err := concurrency.NewSession(c, concurrency.WithTTL(30))
	check(err, "session")

	// An observer reading as leaders come (the recipe's Observe channel is unbuffered).
	octx, ocancel := context.WithCancel(ctx)
	var seenMu sync.Mutex
	var seen []string
	observed := concurrency.NewElection(s3, "go-e").Observe(octx)
	go func() {
		for r := range observed {
			seenMu.Lock()
			seen = append(seen, string(r.Kvs[0].Value))
			seenMu.Unlock()
		}
	}()

	e1 := concurrency.NewElection(s1, "go-e")
	check(e1.Campaign(ctx, "one"), "campaign")
	l, err := e1.Leader(ctx)
	check(err, "leader")
	expect(string(l.Kvs[0].Value), "one", "leader")

	e2 := concurrency.NewElection(s2, "go-e")
	won := make(chan error, 1)
	go func() { won <- e2.Campaign(ctx, "two") }()
	select {
	case err := <-won:
		fail("a second candidate won a held election (%v)", err)
	case <-time.After(500 * time.Millisecond):
	}
	check(e1.Proclaim(ctx, "one-b"), "proclaim")
	service := v3electionpb.NewElectionClient(c.ActiveConnection())
	sl, err := service.Leader(ctx, &v3electionpb.LeaderRequest{Name: []byte("go-e")})
	check(err, "Leader service")
	expect(string(sl.Kv.Value), "one-b", "the service's leader")
	check(e1.Resign(ctx), "resign")
	select {
	case err := <-won:
		check(err, "campaign after the leader resigned")
	case <-time.After(10 * time.Second):
		fail("the waiting candidate did not take over when the leader resigned")
	}
	// A stale leader can no longer proclaim.
	expect(e1.Proclaim(ctx, "stale"), concurrency.ErrElectionNotLeader, "proclaim after resign")

	// The service campaigns behind the recipe's leader (s2, a 2 s lease that stops being kept alive):
	// it takes over when that lease expires.
	g, err := c.Grant(ctx, 30)
	check(err, "grant")
	campaigned := make(chan *v3electionpb.CampaignResponse, 1)
	go func() {
		r, err := service.Campaign(ctx, &v3electionpb.CampaignRequest{Name: []byte("go-e"), Lease: int64(g.ID),
			Value: []byte("three")})
		check(err, "Campaign service")
		campaigned <- r
	}()
	time.Sleep(500 * time.Millisecond)
	s2.Orphan()
	var leader *v3electionpb.LeaderKey
	select {
	case r := <-campaigned:
		leader = r.Leader
	case <-time.After(15 * time.Second):
		fail("the service's candidate did not take over when the leader's lease expired")
	}
	l, err = e1.Leader(ctx)
	check(err, "leader")
	expect(string(l.Kvs[0].Value), "three", "leader after the lease expired")
	_, err = service.Resign(ctx, &v3electionpb.ResignRequest{Leader: leader})
	check(err, "Resign service")
	_, err = e1.Leader(ctx)
	expect(err, concurrency.ErrElectionNoLeader, "leader of an empty election")

	want := []string{"one", "one-b", "two", "three"}
	eventually(10*time.Second, func() bool {
		seenMu.Lock()
		defer seenMu.Unlock()
		return len(seen) >= len(want)
	})
	ocancel()
	seenMu.Lock()
	expect(seen, want, "observed leaders")
	seenMu.Unlock()
}

func main() {
	if len(os.Args) != 3 {
		fail("usage: clientv3_driver <host:port> watch|lease|lock|election")
	}
	endpoint = os.Args[1]
	switch os.Args[2] {
	case "watch":
		watchScenario()
	case "lease":
		leaseScenario()
	case "lock":
		lockScenario()
	case "election":
		electionScenario()
	default:
		fail("unknown scenario %q", os.Args[2])
	}
	fmt.Println("ok")
}
