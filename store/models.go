package store

import "context"

// Model is a model registry entry kept in the store.
type Model struct {
	ID      string `json:"id"`
	OwnedBy string `json:"owned_by"`
	Family  string `json:"family"`
}

// Models is the role of models registered at runtime (config models are
// not stored).
type Models interface {
	PutModel(ctx context.Context, m Model) error
	ListModels(ctx context.Context) ([]Model, error)
}
