# Instance A of two Tollgate instances sharing one PostgreSQL database.
# b.hcl differs only in its listen address. See README.md.
# The admin token and the master key come from $TOLLGATE_ADMIN_TOKEN and
# $TOLLGATE_MASTER_KEY, the same on every instance.
server {
  listen = "127.0.0.1:8081"
}
store "postgres" {
  url   = env("DATABASE_URL")
  lease = "15s"
  dir   = "./shared-data" # hosted files: one directory every instance reads
}
channel "sim" {
  vendor    = "sim"
  base_url  = "sim://local"
  families  = ["chat", "image"]
  protocols = ["openai_chat", "anthropic_messages"]
  models    = ["sim-chat", "sim-image"]
}
model "sim-chat" {
  owned_by = "sim"
  price {
    input  = "0.15"
    output = "0.60"
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
  rpm         = 600 # per account, in total across the instances
  concurrency = 32
}
