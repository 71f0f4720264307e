
    #[test]
    fn an_empty_content_is_denied() {
        assert_eq!(check(&object("")).denial(), Some("spec.content is empty"));
        assert!(check(&object("hello")).is_allowed());
    }
