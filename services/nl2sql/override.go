package nl2sql

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shopmind/shopmind/internal/discovery"
)

// Override is the JSON document under the etcd key OverrideKey: the provider settings it
// holds replace the environment's while it exists (a field left out keeps the
// environment's value); deleting the key returns to the environment.
type Override struct {
	APIURL       *string `json:"api_url,omitempty"`
	APIKey       *string `json:"api_key,omitempty"`
	BotID        *string `json:"bot_id,omitempty"`
	DatasourceID *string `json:"datasource_id,omitempty"`
	RoleID       *string `json:"role_id,omitempty"`
	EmbedURL     *string `json:"embed_url,omitempty"`
	TokenTTL     *string `json:"token_ttl,omitempty"` // a Go duration, 1m to 24h
}

// OverrideKey is the etcd key of the nl2sql configuration override:
// shopmind/<SHOPMIND_ETCD_ENV>/config/nl2sql.
func OverrideKey(c discovery.Config) string {
	env := c.Env
	if env == "" {
		env = discovery.DefaultEnv
	}
	return "shopmind/" + env + "/config/nl2sql"
}

// settings holds the configuration in effect: the environment's, with the etcd override
// applied when there is one. Readers take a snapshot per request.
type settings struct {
	base Config
	cur  atomic.Pointer[effective]
	log  *slog.Logger
}

// effective is one snapshot of the configuration in effect.
type effective struct {
	Config
	source string // "env" or "etcd"
}

func newSettings(base Config, log *slog.Logger) *settings {
	s := &settings{base: base, log: log}
	s.cur.Store(&effective{Config: base, source: "env"})
	return s
}

func (s *settings) get() *effective { return s.cur.Load() }

// apply makes raw (the override's JSON; nil: none) the configuration in effect, or keeps
// the current one and returns why raw is refused.
func (s *settings) apply(raw []byte) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		s.cur.Store(&effective{Config: s.base, source: "env"})
		return nil
	}
	var o Override
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return fmt.Errorf("override is not the expected JSON object: %w", err)
	}
	vars := map[string]string{}
	set := func(key string, v *string) {
		if v != nil {
			vars[key] = *v
		}
	}
	set("SHOPMIND_NL2SQL_API_URL", o.APIURL)
	set("SHOPMIND_NL2SQL_API_KEY", o.APIKey)
	set("SHOPMIND_NL2SQL_BOT_ID", o.BotID)
	set("SHOPMIND_NL2SQL_DATASOURCE_ID", o.DatasourceID)
	set("SHOPMIND_NL2SQL_ROLE_ID", o.RoleID)
	set("SHOPMIND_NL2SQL_EMBED_URL", o.EmbedURL)
	set("SHOPMIND_NL2SQL_TOKEN_TTL", o.TokenTTL)
	parsed, errs := LoadConfig(func(k string) string { return vars[k] })
	if len(errs) > 0 {
		return fmt.Errorf("override refused: %s", strings.Join(errs, "; "))
	}
	c := s.base
	if o.APIURL != nil {
		c.APIURL = parsed.APIURL
	}
	if o.APIKey != nil {
		c.APIKey = parsed.APIKey
	}
	if o.BotID != nil {
		c.BotID = parsed.BotID
	}
	if o.DatasourceID != nil {
		c.DatasourceID = parsed.DatasourceID
	}
	if o.RoleID != nil {
		c.RoleID = parsed.RoleID
	}
	if o.EmbedURL != nil {
		c.EmbedURL = parsed.EmbedURL
	}
	if o.TokenTTL != nil {
		c.TokenTTL = parsed.TokenTTL
	}
	s.cur.Store(&effective{Config: c, source: "etcd"})
	warnPlaceholder(s.log, c, "etcd override")
	return nil
}

// watch follows the override key until ctx ends: the current value first, then every
// change, applied without a restart. A refused value is logged and the configuration in
// effect stays. A broken watch (etcd restarted, revision compacted) is re-established.
func (s *settings) watch(ctx context.Context, cli *clientv3.Client, key string) {
	for ctx.Err() == nil {
		rev, err := s.load(ctx, cli, key)
		if err != nil {
			s.log.Warn("nl2sql: reading the configuration override from etcd", "key", key, "error", err)
			sleep(ctx, 2*time.Second)
			continue
		}
		wch := cli.Watch(clientv3.WithRequireLeader(ctx), key, clientv3.WithRev(rev+1))
		for resp := range wch {
			if err := resp.Err(); err != nil {
				s.log.Warn("nl2sql: configuration override watch broken, re-reading", "key", key, "error", err)
				break
			}
			for _, ev := range resp.Events {
				var raw []byte
				if ev.Type == clientv3.EventTypePut {
					raw = ev.Kv.Value
				}
				s.report(key, s.apply(raw))
			}
		}
		sleep(ctx, 200*time.Millisecond)
	}
}

// load applies the key's current value and returns the revision read.
func (s *settings) load(ctx context.Context, cli *clientv3.Client, key string) (int64, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := cli.Get(rctx, key)
	if err != nil {
		return 0, err
	}
	var raw []byte
	if len(resp.Kvs) > 0 {
		raw = resp.Kvs[0].Value
	}
	s.report(key, s.apply(raw))
	return resp.Header.Revision, nil
}

func (s *settings) report(key string, err error) {
	if err != nil {
		s.log.Error("nl2sql: configuration override refused; the previous configuration stays", "key", key, "error", err)
		return
	}
	s.log.Info("nl2sql: configuration in effect", "source", s.get().source, "key", key)
}

// startWatch opens an etcd client and watches the override when etcd is configured; the
// client closes when ctx ends.
func (s *settings) startWatch(ctx context.Context) error {
	if !s.base.Etcd.Enabled() {
		return nil
	}
	cli, err := discovery.NewClient(s.base.Etcd)
	if err != nil {
		return err
	}
	go func() {
		defer cli.Close()
		s.watch(ctx, cli, OverrideKey(s.base.Etcd))
	}()
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// warnPlaceholder logs a warning for a placeholder API key.
func warnPlaceholder(log *slog.Logger, c Config, source string) {
	if IsPlaceholder(c.APIKey) {
		log.Warn("nl2sql: SHOPMIND_NL2SQL_API_KEY looks like a placeholder, not a real key; provider calls will be rejected until it is set", "source", source)
	}
}
