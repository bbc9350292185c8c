package translate

// The messages and generate-content protocols share a conversation shape:
// one system prompt, turns that alternate between the user and the model,
// tool results in user turns. One walk builds both.

// turnWriter writes one protocol's items of an alternating conversation.
type turnWriter struct {
	text  func(b []byte, raw string) []byte
	media func(b []byte, m media) []byte
	call  func(b []byte, p part) []byte
	// result writes a tool result; media of the result it cannot hold go
	// to the rest of the turn (extra).
	result func(b, extra []byte, p part) (out, rest []byte, err error)
}

// aturn is one turn being built: tool results first, as both protocols
// want them ahead of the rest of a user turn.
type aturn struct {
	role    role
	results []byte
	items   []byte
}

// buildTurns walks the conversation: system texts and in-place system
// messages join the system prompt in order, and consecutive messages of
// one role merge into one turn.
func buildTurns(c *conv, tw turnWriter) (system []byte, turns []aturn, err error) {
	for _, s := range c.system {
		system = tw.text(sep(system), s)
	}
	for i := range c.msgs {
		m := &c.msgs[i]
		if m.role == roleSystem {
			for _, p := range m.parts {
				if p.kind == kindText {
					system = tw.text(sep(system), p.text)
				}
			}
			continue
		}
		if n := len(turns); n == 0 || turns[n-1].role != m.role {
			turns = append(turns, aturn{role: m.role})
		}
		tn := &turns[len(turns)-1]
		for _, p := range m.parts {
			switch p.kind {
			case kindText:
				tn.items = tw.text(sep(tn.items), p.text)
			case kindMedia:
				tn.items = tw.media(sep(tn.items), p.m)
			case kindCall:
				tn.items = tw.call(sep(tn.items), p)
			case kindResult:
				if tn.results, tn.items, err = tw.result(sep(tn.results), tn.items, p); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	return system, turns, nil
}

// appendTurns writes the turns as an array of {"role": ..., field: [...]}
// objects; model names the assistant role.
func appendTurns(b []byte, turns []aturn, model, field string) []byte {
	b = append(b, '[')
	for i, tn := range turns {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"role":"`...)
		if tn.role == roleAssistant {
			b = append(b, model...)
		} else {
			b = append(b, "user"...)
		}
		b = append(b, `","`...)
		b = append(b, field...)
		b = append(b, `":[`...)
		b = append(b, tn.results...)
		if len(tn.results) > 0 && len(tn.items) > 0 {
			b = append(b, ',')
		}
		b = append(b, tn.items...)
		b = append(b, "]}"...)
	}
	return append(b, ']')
}
