module gotemplate-goldens

go 1.19
