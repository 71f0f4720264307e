
    #[test]
    fn an_empty_content_is_filled_in() {
        let mut empty = object("");
        fill_in(&mut empty);
        assert_eq!(empty.spec.content, "(empty)");
        let mut set = object("hello");
        fill_in(&mut set);
        assert_eq!(set.spec.content, "hello");
    }
