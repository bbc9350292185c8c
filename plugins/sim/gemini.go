package sim

// Gemini generateContent: a GenerateContentResponse; streamed, one such
// response per chunk, the last with finishReason and usageMetadata.

func appendGemUsage(b []byte, pl *plan) []byte {
	b = append(b, `,"usageMetadata":{"promptTokenCount":`...)
	b = appendInt(b, pl.in)
	b = append(b, `,"candidatesTokenCount":`...)
	b = appendInt(b, pl.out-pl.thinking)
	b = append(b, `,"totalTokenCount":`...)
	b = appendInt(b, pl.in+pl.out)
	if pl.cached > 0 {
		b = append(b, `,"cachedContentTokenCount":`...)
		b = appendInt(b, pl.cached)
	}
	b = append(b, `,"promptTokensDetails":[{"modality":"TEXT","tokenCount":`...)
	b = appendInt(b, pl.in)
	b = append(b, `}]`...)
	if pl.thinking > 0 {
		b = append(b, `,"thoughtsTokenCount":`...)
		b = appendInt(b, pl.thinking)
	}
	return append(b, '}')
}

// appendGemChunk appends one GenerateContentResponse whose only part is
// text (or the function call when text is nil and the plan calls a tool);
// last adds the finish reason and usage.
func appendGemChunk(b []byte, pl *plan, text []byte, last bool) []byte {
	b = append(b, `{"candidates":[{"content":{"parts":[`...)
	if pl.tool != "" {
		b = append(b, `{"functionCall":{"name":`...)
		b = appendStr(b, pl.tool)
		b = append(b, `,"args":`...)
		b = append(b, pl.args...)
		b = append(b, `}}`...)
	} else {
		b = append(b, `{"text":`...)
		b = appendStrBytes(b, text)
		b = append(b, '}')
	}
	b = append(b, `],"role":"model"}`...)
	if last {
		if pl.limited {
			b = append(b, `,"finishReason":"MAX_TOKENS"`...)
		} else {
			b = append(b, `,"finishReason":"STOP"`...)
		}
	}
	b = append(b, `,"index":0}]`...)
	if last {
		b = appendGemUsage(b, pl)
	}
	b = append(b, `,"modelVersion":`...)
	b = appendStr(b, pl.model)
	b = append(b, `,"responseId":"`...)
	b = pl.appendID(b, 1)
	return append(b, `"}`...)
}

func appendGeminiBody(b []byte, pl *plan) []byte {
	return appendGemChunk(b, pl, pl.text, true)
}

func streamGemini(s *streamer, pl *plan) error {
	if pl.tool != "" {
		st := s.begin("")
		s.buf = appendGemChunk(s.buf, pl, nil, true)
		return s.send(st)
	}
	from := 0
	for i := 0; i < pl.chunks; i++ {
		end := pl.chunkEnd(i, from)
		st := s.begin("")
		s.buf = appendGemChunk(s.buf, pl, pl.text[from:end], i == pl.chunks-1)
		from = end
		if err := s.send(st); err != nil {
			return err
		}
	}
	return nil
}
