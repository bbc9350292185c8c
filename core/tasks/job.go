package tasks

import (
	"bytes"
	"encoding/gob"
	"encoding/json"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Job is what a task keeps to ask its plugin again, after a restart too:
// the request as the plugin is handed it (uploads as links, never their
// bytes), how the vendor runs it, the base of the links to its results,
// and the model's prices when it was submitted (a task settles at them,
// whatever a reload changes meanwhile).
type Job struct {
	Request     vendor.JobRequest
	UpstreamJob bool // Submit and Poll; false: one Run
	LinkBase    string
	Price       *config.Price
	// Alternates are the channels a background Run moves on to, in order,
	// when one fails before answering (a connection failure, a 5xx, a
	// 429), as a synchronous call would.
	Alternates []Alternate
}

// Alternate is another channel of the task's model.
type Alternate struct {
	Channel, Vendor, Upstream string
}

// Encode is the job as the store keeps it (store.Task.Job): JSON, read
// back on every poll (a gob stream compiles its types each time).
func (j *Job) Encode() ([]byte, error) { return json.Marshal(j) }

// DecodeJob reads a job Encode wrote, or the gob an earlier version wrote.
func DecodeJob(b []byte) (Job, error) {
	var j Job
	if len(b) > 0 && b[0] == '{' {
		err := json.Unmarshal(b, &j)
		return j, err
	}
	err := gob.NewDecoder(bytes.NewReader(b)).Decode(&j)
	return j, err
}
