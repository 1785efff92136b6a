"""Storage, identities, durable files and the exception tree shared by every daemon."""
