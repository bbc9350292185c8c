package gateway

import "github.com/tollgate-gw/tollgate/core/files"

// linkBase is the base of the links to hosted files: public_url, the TLS
// domain, else the address the API listens on; never a request's Host.
func (g *Gateway) linkBase() string {
	addr := ""
	if p := g.addr.Load(); p != nil {
		addr = *p
	}
	s := g.gen.Load()
	cfg := g.cfg
	if s != nil {
		cfg = s.cfg
	}
	return files.BaseURL(cfg.Server.PublicURL, g.tls.Domains(), addr, g.tls != nil)
}
