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
package org.pulsarfork.broker;

import java.util.Set;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.common.policies.data.ClusterData;
import org.apache.pulsar.common.policies.data.TenantInfoImpl;

/** The namespace the in-process broker tests use, fork/ns on cluster "test", created on a broker just set up. */
final class InProcessNamespace {
    private InProcessNamespace() {
    }

    static void create(PulsarAdmin admin, String webServiceAddress) throws Exception {
        admin.clusters().createCluster("test", ClusterData.builder().serviceUrl(webServiceAddress).build());
        admin.tenants().createTenant("fork", new TenantInfoImpl(Set.of(), Set.of("test")));
        admin.namespaces().createNamespace("fork/ns", Set.of("test"));
    }
}
