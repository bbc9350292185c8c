package pipeline

import (
	"context"
	"encoding/base64"
	"errors"
	"time"

	"github.com/tidwall/sjson"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// maxInline bounds a result the gateway fetches to put in an answer as
// base64 (a b64_json image an upstream answered as a link).
const maxInline = 64 << 20

// deliver stores the outcome's files and writes their links (and their
// expiry) into the answer; it records what was delivered on j. A file the
// plugin names by URL is fetched (an upstream's link is re-hosted, so no
// answer carries an upstream's address), or written inline as base64
// where the client asked for bytes. Files and fetches fail as the
// upstream's fault: nothing is charged for an answer that cannot be had.
func deliver(ctx context.Context, host FileHost, owner string, j *Job, modelRetention time.Duration, out *vendor.JobOutcome) ([]byte, error) {
	body := out.Body
	retention := effective(j.Spec.Retention, modelRetention, defaultRetention)
	j.Units, j.Inline = out.Units, out.Inline
	j.URLs = append(j.URLs[:0], out.URLs...)
	var expires time.Time
	if !out.ExpiresAt.IsZero() && len(out.URLs) > 0 {
		expires = out.ExpiresAt
	}
	for _, f := range out.Files {
		if host == nil {
			return nil, apierr.Internal(errors.New("no file store to host results in"))
		}
		var value any
		if f.Inline {
			data, _, err := host.Fetch(ctx, f, maxInline)
			if err != nil {
				return nil, resultUnavailable(err)
			}
			value = base64.StdEncoding.EncodeToString(data)
			j.Inline = true
		} else {
			url, exp, err := host.Host(ctx, owner, f, retention, j.LinkBase)
			if err != nil {
				if f.URL != "" {
					return nil, resultUnavailable(err)
				}
				return nil, apierr.Internal(err)
			}
			value = url
			j.URLs = append(j.URLs, url)
			if expires.IsZero() || exp.Before(expires) {
				expires = exp
			}
		}
		var err error
		if body, err = sjson.SetBytes(body, f.Slot, value); err != nil {
			return nil, apierr.Internal(err)
		}
	}
	if !expires.IsZero() {
		j.ExpiresAt = &expires
		if out.ExpiresSlot != "" {
			var err error
			if body, err = sjson.SetBytes(body, out.ExpiresSlot, expires.Unix()); err != nil {
				return nil, apierr.Internal(err)
			}
		}
	}
	return body, nil
}

// resultExpiry is when a succeeded task of j becomes expired (zero:
// never): where its family expires results, when its hosted files
// expire; where its create route expires records, its retention after it
// ended, files or not.
func resultExpiry(j *Job, modelRetention time.Duration, ended time.Time) time.Time {
	switch {
	case j.Spec.ExpireResults && j.ExpiresAt != nil:
		return *j.ExpiresAt
	case j.Route.ExpireRecords:
		return ended.Add(effective(j.Spec.Retention, modelRetention, defaultRetention))
	}
	return time.Time{}
}

// resultUnavailable is a result link that could not be fetched: one
// message whatever went wrong (a client learns nothing of the network).
func resultUnavailable(err error) *apierr.Error {
	return &apierr.Error{Status: 502, Code: apierr.UpstreamError, Type: "api_error",
		Message: "the upstream's result could not be fetched", Cause: err}
}
