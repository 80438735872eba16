//! One segment of an outgoing request's path: an index or rule uid, percent-encoded as a
//! form component, so that a uid holding `/`, `?` or a space stays one segment.

/// `segment` percent-encoded as one URL path segment.
pub fn path_segment(segment: &str) -> String {
    url::form_urlencoded::byte_serialize(segment.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::path_segment;

    #[test]
    fn a_segment_stays_one_segment() {
        assert_eq!(path_segment("movies_2"), "movies_2");
        assert_eq!(path_segment("a/b c?d"), "a%2Fb+c%3Fd");
    }
}
