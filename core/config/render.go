package config

import (
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/tollgate-gw/tollgate/core/english"
	"github.com/tollgate-gw/tollgate/core/money"
)

// Render writes c as an HCL file that Parse reads back to the same Config:
// a starting point for an operator's own file. Secrets are written as they
// are; Masked returns a copy safe to print. Channels written with
// enabled = false are not part of c.Channels and are not written.
func Render(c *Config) string {
	f := hclwrite.NewEmptyFile()
	root := f.Body()

	s := root.AppendNewBlock("server", nil).Body()
	s.SetAttributeValue("listen", cty.StringVal(c.Server.Listen))
	setStr(s, "admin_token", c.Server.AdminToken)
	setStr(s, "master_key", c.Server.MasterKey)
	if c.Server.AllowPrivateURLs {
		s.SetAttributeValue("allow_private_urls", cty.True)
	}
	setStr(s, "durability", c.Server.Durability)
	setStr(s, "public_url", c.Server.PublicURL)
	setStr(s, "billing_url", c.Server.BillingURL)
	setStr(s, "metrics_listen", c.Server.MetricsListen)
	if c.Server.SweepEvery != 0 {
		s.SetAttributeValue("sweep_every", cty.StringVal(c.Server.SweepEvery.String()))
	}
	if c.Server.DrainTimeout != DefaultDrainTimeout {
		s.SetAttributeValue("drain_timeout", cty.StringVal(c.Server.DrainTimeout.String()))
	}
	if c.Server.PluginRestartWait != 0 {
		s.SetAttributeValue("plugin_restart_wait", cty.StringVal(c.Server.PluginRestartWait.String()))
	}
	setStr(s, "admin_listen", c.Server.AdminListen)
	setStr(s, "master_key_file", c.Server.MasterKeyFile)
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"header_timeout", c.Server.HeaderTimeout}, {"body_timeout", c.Server.BodyTimeout},
		{"idle_timeout", c.Server.IdleTimeout}, {"write_timeout", c.Server.WriteTimeout}} {
		if d.v != 0 {
			s.SetAttributeValue(d.name, cty.StringVal(d.v.String()))
		}
	}
	for _, z := range []struct {
		name string
		v    int64
	}{{"max_body_memory", c.Server.MaxBodyMemory}, {"max_event_size", c.Server.MaxEventSize},
		{"memory_limit", c.Server.MemoryLimit}} {
		if z.v != 0 {
			s.SetAttributeValue(z.name, cty.StringVal(strconv.FormatInt(z.v, 10)))
		}
	}
	if t := c.Server.TLS; t != nil {
		// The defaults of listen and http_listen change with TLS: both are
		// written so the file reads back the same.
		s.SetAttributeValue("http_listen", cty.StringVal(c.Server.HTTPListen))
		tb := s.AppendNewBlock("tls", nil).Body()
		setList(tb, "domains", t.Domains)
		setStr(tb, "email", t.Email)
		setStr(tb, "ca", t.CA)
		setStr(tb, "ca_root", t.CARoot)
		setStr(tb, "storage", t.Storage)
		if t.RenewInterval != 0 {
			tb.SetAttributeValue("renew_interval", cty.StringVal(t.RenewInterval.String()))
		}
		if t.RenewalWindowRatio != 0 {
			tb.SetAttributeValue("renewal_window_ratio", cty.NumberFloatVal(t.RenewalWindowRatio))
		}
		setStr(tb, "cert_file", t.CertFile)
		setStr(tb, "key_file", t.KeyFile)
	} else {
		setStr(s, "http_listen", c.Server.HTTPListen)
	}
	if tm := c.Telemetry; tm.Endpoint != "" || tm.Protocol != "" || tm.SamplerRatio != nil || tm.ServiceName != "" || len(tm.Headers) > 0 {
		root.AppendNewline()
		b := root.AppendNewBlock("telemetry", nil).Body()
		setStr(b, "endpoint", tm.Endpoint)
		setStr(b, "protocol", tm.Protocol)
		if tm.SamplerRatio != nil {
			b.SetAttributeValue("sampler_ratio", cty.NumberFloatVal(*tm.SamplerRatio))
		}
		setStr(b, "service_name", tm.ServiceName)
		setMap(b, "headers", tm.Headers)
	}

	if c.Audit.Every != 0 {
		root.AppendNewline()
		root.AppendNewBlock("audit", nil).Body().SetAttributeValue("every", cty.StringVal(c.Audit.Every.String()))
	}

	root.AppendNewline()
	st := root.AppendNewBlock("store", []string{c.Store.Kind}).Body()
	if c.Store.Postgres() {
		st.SetAttributeValue("url", cty.StringVal(c.Store.URL))
	}
	st.SetAttributeValue("dir", cty.StringVal(c.Store.Dir))
	if c.Store.Lease != 0 {
		st.SetAttributeValue("lease", cty.StringVal(c.Store.Lease.String()))
	}
	if c.Store.ReserveMB != 0 {
		st.SetAttributeValue("reserve_mb", cty.NumberIntVal(int64(c.Store.ReserveMB)))
	}

	for _, p := range c.Plugins {
		root.AppendNewline()
		b := root.AppendNewBlock("plugin", []string{p.Name}).Body()
		setStr(b, "path", p.Path)
		setMap(b, "settings", p.Settings)
		if p.GOMAXPROCS != 0 {
			b.SetAttributeValue("gomaxprocs", cty.NumberIntVal(int64(p.GOMAXPROCS)))
		}
		if p.MemoryLimit != 0 {
			b.SetAttributeValue("memory_limit", cty.StringVal(strconv.FormatInt(p.MemoryLimit, 10)))
		}
	}
	for _, k := range c.KnowledgeBases {
		root.AppendNewline()
		b := root.AppendNewBlock("knowledge_base", []string{k.ID}).Body()
		setStr(b, "name", k.Name)
		b.SetAttributeValue("docs", cty.StringVal(k.Docs))
	}
	for _, ch := range c.Channels {
		root.AppendNewline()
		b := root.AppendNewBlock("channel", []string{ch.Name}).Body()
		b.SetAttributeValue("vendor", cty.StringVal(ch.Vendor))
		setStr(b, "base_url", ch.BaseURL)
		setStr(b, "api_key", ch.APIKey)
		setList(b, "families", ch.Families)
		setList(b, "protocols", ch.Protocols)
		setList(b, "models", ch.Models)
		if ch.Priority != 0 {
			b.SetAttributeValue("priority", cty.NumberIntVal(int64(ch.Priority)))
		}
		if ch.Weight != 1 {
			b.SetAttributeValue("weight", cty.NumberIntVal(int64(ch.Weight)))
		}
		if ch.Timeout != 0 {
			b.SetAttributeValue("timeout", cty.StringVal(ch.Timeout.String()))
		}
		if ch.Transport == TransportInProcess {
			b.SetAttributeValue("transport", cty.StringVal(ch.Transport))
		}
		if ch.IdleTimeout != 0 {
			b.SetAttributeValue("idle_timeout", cty.StringVal(ch.IdleTimeout.String()))
		}
		setList(b, "tools", ch.Tools)
		setMap(b, "settings", ch.Settings)
	}
	for _, m := range c.Models {
		root.AppendNewline()
		b := root.AppendNewBlock("model", []string{m.ID}).Body()
		setStr(b, "owned_by", m.OwnedBy)
		b.SetAttributeValue("family", cty.StringVal(m.Family))
		setList(b, "aliases", m.Aliases)
		chat := m.Family == DefaultFamily || m.Family == ""
		if chat || m.DefaultMaxTokens != DefaultMaxTokens {
			b.SetAttributeValue("default_max_tokens", cty.NumberIntVal(int64(m.DefaultMaxTokens)))
		}
		if m.MaxOutputTokens != m.DefaultMaxTokens {
			b.SetAttributeValue("max_output_tokens", cty.NumberIntVal(int64(m.MaxOutputTokens)))
		}
		setList(b, "translate_from", m.TranslateFrom)
		if chat || m.Timeout != DefaultModelTimeout {
			b.SetAttributeValue("timeout", cty.StringVal(m.Timeout.String()))
		}
		if m.Grid != 0 {
			b.SetAttributeValue("grid", cty.NumberIntVal(int64(m.Grid)))
		}
		if m.IgnoreSize {
			b.SetAttributeValue("ignore_size", cty.True)
		}
		if m.KeepAliveAfter != 0 {
			b.SetAttributeValue("keepalive_after", cty.StringVal(m.KeepAliveAfter.String()))
		}
		if m.MaxDuration != 0 {
			b.SetAttributeValue("max_duration", cty.NumberIntVal(int64(m.MaxDuration)))
		}
		if m.MaxRuntime != 0 {
			b.SetAttributeValue("max_runtime", cty.StringVal(m.MaxRuntime.String()))
		}
		if m.CallTimeout != 0 {
			b.SetAttributeValue("call_timeout", cty.StringVal(m.CallTimeout.String()))
		}
		if m.Retention != 0 {
			b.SetAttributeValue("retention", cty.StringVal(m.Retention.String()))
		}
		setMap(b, "settings", m.Settings)
		if m.IdleTimeout != 0 {
			b.SetAttributeValue("idle_timeout", cty.StringVal(m.IdleTimeout.String()))
		}
		if m.Free {
			b.SetAttributeValue("free", cty.True)
		}
		prices := []money.Nano{
			m.Price.Input, m.Price.Output, m.Price.CachedInput, m.Price.CacheWrite, m.Price.PerImage,
			m.Price.PerSecond, m.Price.PerCall, m.Price.PerCharacter, m.Price.PerGeneration, m.Price.PerImageHD,
		}
		var pb *hclwrite.Body
		price := func() *hclwrite.Body {
			if pb == nil {
				pb = b.AppendNewBlock("price", nil).Body()
			}
			return pb
		}
		for i, p := range prices {
			if p != 0 {
				price().SetAttributeValue(priceFields[i], cty.StringVal(p.String()))
			}
		}
		setStr(pbOr(price, m.Price.AreaThresholdMP != ""), "area_threshold_mp", m.Price.AreaThresholdMP)
		if len(m.Price.PerSecondByResolution) > 0 {
			tiers := map[string]string{}
			for t, p := range m.Price.PerSecondByResolution {
				tiers[t] = p.String()
			}
			setMap(price(), "per_second_by_resolution", tiers)
		}
		if len(m.Caps.Tools) > 0 || m.Caps.Reasoning || m.Caps.Vision {
			cb := b.AppendNewBlock("caps", nil).Body()
			setList(cb, "tools", m.Caps.Tools)
			if m.Caps.Reasoning {
				cb.SetAttributeValue("reasoning", cty.True)
			}
			if m.Caps.Vision {
				cb.SetAttributeValue("vision", cty.True)
			}
		}
	}

	root.AppendNewline()
	l := root.AppendNewBlock("limits", nil).Body()
	l.SetAttributeValue("rpm", cty.NumberIntVal(int64(c.Limits.RPM)))
	l.SetAttributeValue("concurrency", cty.NumberIntVal(int64(c.Limits.Concurrency)))
	root.AppendNewline()
	ab := root.AppendNewBlock("accounts", nil).Body()
	switch c.Accounts.Signup {
	case SignupOpen:
		ab.SetAttributeValue("signup", cty.True)
	case SignupInvite:
		ab.SetAttributeValue("signup", cty.StringVal("invite"))
	}
	ab.SetAttributeValue("signup_credit", cty.StringVal(c.Accounts.SignupCredit.String()))
	if cn := c.Console; cn.Enabled {
		root.AppendNewline()
		cb := root.AppendNewBlock("console", nil).Body()
		setStr(cb, "listen", cn.Listen)
		if cn.SessionTTL != DefaultSessionTTL {
			cb.SetAttributeValue("session_ttl", cty.StringVal(cn.SessionTTL.String()))
		}
	}
	if bl := c.Billing; bl.Enabled {
		root.AppendNewline()
		renderBilling(root.AppendNewBlock("billing", nil).Body(), bl)
	}
	if len(c.Pipeline.Stages) > 0 {
		root.AppendNewline()
		setList(root.AppendNewBlock("pipeline", nil).Body(), "stages", c.Pipeline.Stages)
	}
	for _, name := range sortedKeys(c.Pipeline.Settings) {
		root.AppendNewline()
		setMap(root.AppendNewBlock("stage", []string{name}).Body(), "settings", c.Pipeline.Settings[name])
	}
	return string(hclwrite.Format(f.Bytes()))
}

func renderBilling(b *hclwrite.Body, bl Billing) {
	def := DefaultBilling()
	b.SetAttributeValue("processor", cty.StringVal(bl.Processor))
	setStr(b, "secret_key", bl.SecretKey)
	setStr(b, "webhook_secret", bl.WebhookSecret)
	if bl.WebhookPath != def.WebhookPath {
		b.SetAttributeValue("webhook_path", cty.StringVal(bl.WebhookPath))
	}
	if bl.WebhookTolerance != def.WebhookTolerance {
		b.SetAttributeValue("webhook_tolerance", cty.StringVal(bl.WebhookTolerance.String()))
	}
	b.SetAttributeValue("currency", cty.StringVal(bl.Currency))
	b.SetAttributeValue("credits_per_unit", cty.StringVal(bl.CreditsPerUnit.String()))
	b.SetAttributeValue("minimum", cty.StringVal(bl.Minimum.String()))
	if bl.Maximum != 0 {
		b.SetAttributeValue("maximum", cty.StringVal(bl.Maximum.String()))
	}
	presets := make([]string, len(bl.Presets))
	for i, p := range bl.Presets {
		presets[i] = p.String()
	}
	setList(b, "presets", presets)
	setStr(b, "api_url", bl.APIURL)
	if bl.SimListen != def.SimListen {
		b.SetAttributeValue("sim_listen", cty.StringVal(bl.SimListen))
	}
}

// pbOr is the price block when cond holds (creating it), else nil.
func pbOr(price func() *hclwrite.Body, cond bool) *hclwrite.Body {
	if !cond {
		return nil
	}
	return price()
}

func setStr(b *hclwrite.Body, name, v string) {
	if v != "" && b != nil {
		b.SetAttributeValue(name, cty.StringVal(v))
	}
}

func setList(b *hclwrite.Body, name string, vs []string) {
	if vs == nil {
		return
	}
	l := make([]cty.Value, len(vs))
	for i, v := range vs {
		l[i] = cty.StringVal(v)
	}
	if len(l) == 0 {
		b.SetAttributeValue(name, cty.EmptyTupleVal)
		return
	}
	b.SetAttributeValue(name, cty.TupleVal(l))
}

func setMap(b *hclwrite.Body, name string, m map[string]string) {
	if m == nil {
		return
	}
	vals := make(map[string]cty.Value, len(m))
	for k, v := range m {
		vals[k] = cty.StringVal(v)
	}
	b.SetAttributeValue(name, cty.ObjectVal(vals))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Masked returns a copy of c with its secrets (admin_token, master_key,
// api_key, and settings whose name says key, token, secret or password)
// replaced by a note of their length, for `tollgate config check` and logs.
func Masked(c *Config) *Config {
	m := *c
	m.Server.AdminToken = mask(c.Server.AdminToken)
	m.Server.MasterKey = mask(c.Server.MasterKey)
	if c.Telemetry.Headers != nil {
		m.Telemetry.Headers = make(map[string]string, len(c.Telemetry.Headers))
		for k, v := range c.Telemetry.Headers {
			m.Telemetry.Headers[k] = mask(v)
		}
	}
	m.Store.URL = maskURL(c.Store.URL)
	m.Billing.SecretKey, m.Billing.WebhookSecret = mask(c.Billing.SecretKey), mask(c.Billing.WebhookSecret)
	m.Billing.Presets = slices.Clone(c.Billing.Presets)
	m.Plugins = make([]Plugin, len(c.Plugins))
	for i, p := range c.Plugins {
		p.Settings = maskSettings(p.Settings)
		m.Plugins[i] = p
	}
	m.Channels = make([]Channel, len(c.Channels))
	for i, ch := range c.Channels {
		ch.APIKey = mask(ch.APIKey)
		ch.Settings = maskSettings(ch.Settings)
		m.Channels[i] = ch
	}
	m.index()
	return &m
}

// maskURL hides the password of a connection string.
func maskURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return mask(s)
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

func mask(s string) string {
	if s == "" {
		return ""
	}
	return "<secret, " + english.Count(len(s), "character") + ">"
}

func maskSettings(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		lk := strings.ToLower(k)
		if strings.Contains(lk, "key") || strings.Contains(lk, "token") || strings.Contains(lk, "secret") || strings.Contains(lk, "password") {
			v = mask(v)
		}
		out[k] = v
	}
	return out
}
