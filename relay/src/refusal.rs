//! Why a feature's request over HTTP changed nothing (an answer from a
//! notification, a standing rule): the status to answer with, a stable
//! code and words for a person.

#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub code: &'static str,
    pub detail: String,
}

pub fn refuse(status: u16, code: &'static str, detail: impl Into<String>) -> Refusal {
    Refusal { status, code, detail: detail.into() }
}
