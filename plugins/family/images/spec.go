package images

import (
	"net/http"
	"time"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// The family's names, as the gateway, the config and the log rows use them.
const (
	Family     = "image"
	UnitType   = "image"
	PriceUnit  = "per_image"
	TaskPrefix = "img_"

	OpGenerations = "generations"
	OpEdits       = "edits"

	PathGenerations = "/v1/images/generations"
	PathEdits       = "/v1/images/edits"
)

// Limits of the spec's images part and its Limits part.
const (
	MaxN               = 10       // n is 1..10
	MaxGenerationsBody = 32 << 20 // the chat body limit (PRODUCT §7)
	MaxEditsBody       = 95 << 20 // image edits body
	ListLimitDefault   = 30
	ListLimitMax       = 100
	MaxRuntime         = 280 * time.Second // an async task's longest run
	AttemptTimeout     = 240 * time.Second // one channel attempt
	CallTimeout        = 280 * time.Second // across channel attempts
	KeepAliveAfter     = 90 * time.Second  // errors rule 6
	Retention          = 24 * time.Hour    // platform-hosted images
)

// Spec is the image family's contract with the gateway: every image plugin
// returns it in Describe.
func Spec() vendor.FamilySpec {
	return vendor.FamilySpec{
		Name:       Family,
		UnitType:   UnitType,
		PriceUnit:  PriceUnit,
		TaskPrefix: TaskPrefix,
		Routes: []vendor.FamilyRoute{
			{Method: http.MethodPost, Path: PathGenerations, Kind: vendor.RouteCreate, Operation: OpGenerations,
				MaxBody: MaxGenerationsBody, Async: vendor.AsyncField},
			// Edits take JSON or multipart (image / image[] files, form
			// field async=true).
			{Method: http.MethodPost, Path: PathEdits, Kind: vendor.RouteCreate, Operation: OpEdits,
				Multipart: true, MaxBody: MaxEditsBody, Async: vendor.AsyncField},
			// Tasks of both operations are polled and listed here.
			{Method: http.MethodGet, Path: PathGenerations + "/{id}", Kind: vendor.RoutePoll},
			{Method: http.MethodGet, Path: PathGenerations, Kind: vendor.RouteList},
		},
		InFlightStatus:    http.StatusAccepted,
		ListItem:          "task",
		ListLimitDefault:  ListLimitDefault,
		ListLimitMax:      ListLimitMax,
		ListStatuses:      []string{"queued", "running", "succeeded", "failed", "in_flight"},
		ListToExcludesDay: true,
		MaxRuntime:        MaxRuntime,
		AttemptTimeout:    AttemptTimeout,
		CallTimeout:       CallTimeout,
		KeepAliveAfter:    KeepAliveAfter,
		Retention:         Retention,
		// The spec's interruption rule: an async image cut by a restart
		// fails, refunded in full.
		ResumeAfterRestart: false,
		Endpoint:           "images",
		LogKind:            "image",
		Examples: []vendor.Example{{Method: http.MethodPost, Path: PathGenerations,
			Body: `"prompt": "a lighthouse at dusk"`}},
	}
}
