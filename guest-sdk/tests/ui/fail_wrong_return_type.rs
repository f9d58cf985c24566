use assignor_sdk::{assignor, AssignRequest, Assignment};

#[assignor(name = "range", version = "1.0.0", description = "d", protocol = "eager")]
pub fn assign(request: &AssignRequest) -> Assignment {
    Assignment::new(request)
}

fn main() {}
