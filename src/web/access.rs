//! `/access`: pending pairing codes (Approve / Deny), approved senders (Revoke),
//! owners, each sender's tier and today's spend.

pub async fn page() -> &'static str {
    "access"
}
pub async fn approve() -> &'static str {
    "approve"
}
pub async fn deny() -> &'static str {
    "deny"
}
pub async fn revoke() -> &'static str {
    "revoke"
}
