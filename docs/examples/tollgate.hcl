# An example Tollgate configuration: sim for local tests, OpenAI and Anthropic
# when their keys are set. Without them the two real channels are written
# but disabled (enabled = false), so this file starts as it is:
#
#     bin/tollgate config check --config docs/examples/tollgate.hcl
#     bin/tollgate serve --config docs/examples/tollgate.hcl
#
# See docs/config.md for every attribute.

server {
  listen             = "127.0.0.1:8080"
  admin_token        = env("TOLLGATE_ADMIN_TOKEN", "")
  allow_private_urls = false
  durability         = "strict"
}

store "badger" {
  dir = "./data"
}

channel "sim" {
  vendor    = "sim"
  base_url  = "sim://local"
  families  = ["chat", "image"]
  protocols = ["openai_chat", "anthropic_messages", "openai_responses", "gemini_native"]
  models    = ["gpt-4o-mini", "claude-sonnet-4-5", "sim-image"]
  priority  = 0
  settings  = {
    latency = "5ms" # sim waits this long before answering
  }
}

channel "openai-main" {
  vendor    = "openai"                 # a plugin; binaries sit beside `tollgate`
  base_url  = "https://api.openai.com" # the vendor root, without /v1
  api_key   = env("OPENAI_API_KEY", "")
  enabled   = env("OPENAI_API_KEY", "") != "" # on when the key is set
  families  = ["chat"]
  protocols = ["openai_chat", "openai_responses"]
  models    = ["gpt-4o-mini"]
  priority  = 10
  weight    = 3
  timeout   = "120s"
  tools     = ["web_search"]
}

channel "anthropic-main" {
  vendor    = "anthropic"
  base_url  = "https://api.anthropic.com"
  api_key   = env("ANTHROPIC_API_KEY", "")
  enabled   = env("ANTHROPIC_API_KEY", "") != ""
  families  = ["chat"]
  protocols = ["anthropic_messages"]
  models    = ["claude-sonnet-4-5"]
  priority  = 10
}

model "gpt-4o-mini" {
  owned_by           = "openai"
  family             = "chat"
  aliases            = ["gpt-4o-mini-2024-07-18"]
  default_max_tokens = 16384
  price {
    input        = "0.15"
    output       = "0.60"
    cached_input = "0.075"
  }
  caps {
    tools  = ["web_search"]
    vision = true
  }
}

model "claude-sonnet-4-5" {
  owned_by           = "anthropic"
  family             = "chat"
  default_max_tokens = 8192
  max_output_tokens  = 32000
  translate_from     = ["openai_responses", "gemini_native"]
  timeout            = "600s" # coding agents run long turns
  price {
    input        = "3"
    output       = "15"
    cached_input = "0.30"
    cache_write  = "3.75"
  }
  caps {
    reasoning = true
    vision    = true
  }
}

model "sim-image" {
  owned_by = "sim"
  family   = "image"
  price {
    per_image = "0.04"
  }
}

limits {
  rpm         = 600
  concurrency = 32
}

accounts {
  signup_credit = "121.32" # credit of an account created without initial_credit, or by sign-up
  signup        = false    # console sign-up: true (anyone), "invite" (with a link) or false (the operator adds people)
}

# The web console (docs/console.md): people sign in, make keys, read their
# calls. Without this block there is none; listen puts it on its own address.
console {
  # listen = "127.0.0.1:8081"
}

pipeline {
  stages = ["auth", "allowlist", "idempotency", "precharge", "translate", "dispatch", "settle", "log"]
}
