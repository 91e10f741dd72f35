/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *   http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing,
 * software distributed under the License is distributed on an
 * "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
 * KIND, either express or implied.  See the License for the
 * specific language governing permissions and limitations
 * under the License.
 */
package org.pulsarfork.bench;

/**
 * TestNG groups of the side-by-side bench.
 */
public final class BenchGroups {
    /**
     * The test reproduces an upstream bug: it must pass on our jars and fail on the upstream jars of
     * the same line. {@link UpstreamBugInverter} turns its upstream failure into a pass, and a pass
     * there into a failure ("does not reproduce the bug").
     */
    public static final String UPSTREAM_BUG = "upstream-bug";

    /** The test exercises classes that exist only in our jars; the upstream run leaves it out. */
    public static final String FORK_ONLY = "fork-only";

    private BenchGroups() {
    }

    /** True when this JVM runs the bench against the upstream jars. */
    public static boolean onUpstream() {
        return "upstream".equals(System.getProperty("bench.target"));
    }
}
