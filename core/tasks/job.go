package tasks

import (
	"bytes"
	"encoding/gob"

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

// Encode is the job as the store keeps it (store.Task.Job).
func (j *Job) Encode() ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(j); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// DecodeJob reads a job Encode wrote.
func DecodeJob(b []byte) (Job, error) {
	var j Job
	err := gob.NewDecoder(bytes.NewReader(b)).Decode(&j)
	return j, err
}
